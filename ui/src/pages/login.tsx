// The login page and the first-run setup page (the one-time link `serve` prints).
import { useState } from 'preact/hooks';
import { post } from '../api';
import { ErrorLine, Field, useAction } from '../components';
import type { Me } from '../session';

export function Login(props: { onLogin(me: Me): void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction(async () => props.onLogin(await post<Me>('/dashboard/api/login', { email, password })));
  return (
    <main class="auth" id="main">
      <form
        class="card auth-card"
        onSubmit={(e) => {
          e.preventDefault();
          void action.run();
        }}
      >
        <h1>Postern</h1>
        <p class="muted">Log in to run the appliance.</p>
        <Field label="Email">
          {(id) => (
            <input id={id} type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
          )}
        </Field>
        <Field label="Password">
          {(id) => (
            <input
              id={id}
              type="password"
              autocomplete="current-password"
              required
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          )}
        </Field>
        <ErrorLine error={action.error} />
        <button type="submit" disabled={action.busy}>
          Log in
        </button>
        <p class="muted small-print">Forgot it? On the server: postern operator reset-password --email you@example.com</p>
      </form>
    </main>
  );
}

export function Setup(props: { token: string; onDone(me: Me): void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const action = useAction(async () => {
    if (password !== again) throw new Error('the two passwords differ');
    props.onDone(await post<Me>('/dashboard/api/setup', { token: props.token, email, password }));
  });
  return (
    <main class="auth" id="main">
      <form
        class="card auth-card"
        onSubmit={(e) => {
          e.preventDefault();
          void action.run();
        }}
      >
        <h1>Set up Postern</h1>
        <p class="muted">Create the first owner: it runs every workspace and invites the other operators.</p>
        <Field label="Email">
          {(id) => (
            <input id={id} type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
          )}
        </Field>
        <Field label="Password" hint="At least 10 characters.">
          {(id) => (
            <input
              id={id}
              type="password"
              autocomplete="new-password"
              required
              minLength={10}
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Password again">
          {(id) => (
            <input
              id={id}
              type="password"
              autocomplete="new-password"
              required
              value={again}
              onInput={(e) => setAgain(e.currentTarget.value)}
            />
          )}
        </Field>
        <ErrorLine error={action.error} />
        <button type="submit" disabled={action.busy}>
          Create owner
        </button>
      </form>
    </main>
  );
}
