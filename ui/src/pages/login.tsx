// The login page and the first-run setup page (the one-time link `serve` prints).
import { useState } from 'preact/hooks';
import { startAuthentication, type PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/browser';
import { ApiError, get, post } from '../api';
import { ErrorLine, Field, useAction, useAsync } from '../components';
import type { Me } from '../session';

export function Login(props: { onLogin(me: Me): void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  // The second step, once the server says this operator has an authenticator app.
  const [second, setSecond] = useState<'code' | 'recovery' | null>(null);
  const [code, setCode] = useState('');
  const action = useAction(async () => {
    const proof = second === 'code' ? { code: code.trim() } : second === 'recovery' ? { recoveryCode: code.trim() } : {};
    try {
      props.onLogin(await post('/dashboard/api/login', { email, password, ...proof }));
    } catch (e) {
      if (e instanceof ApiError && e.extra.secondFactor === 'totp' && !second) {
        setSecond('code');
        return;
      }
      throw e;
    }
  });
  // Single sign-on, when the box has a provider: a link (the sign-in is a navigation to the
  // provider and back); a failed one comes back with its reason in the query.
  const state = useAsync(() => get('/dashboard/api/state'), []);
  const ssoError = new URLSearchParams(location.search).get('sso_error');
  // A passkey signs in on its own: the authenticator proves the key and who unlocked it.
  const passkey = useAction(async () => {
    // The options' shape is WebAuthn's (the W3C's), not the contract's.
    const optionsJSON = (await post('/dashboard/api/login/passkey/options')) as PublicKeyCredentialRequestOptionsJSON;
    const response = await startAuthentication({ optionsJSON });
    props.onLogin(await post('/dashboard/api/login/passkey', { response }));
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
        {second && (
          <>
            <Field
              label={second === 'code' ? 'Authentication code' : 'Recovery code'}
              hint={
                second === 'code' ? 'The 6 digits your authenticator app shows now.' : 'One of the ten codes saved when the app was set up.'
              }
            >
              {(id) => (
                <input
                  id={id}
                  autoFocus
                  required
                  autocomplete="one-time-code"
                  inputMode={second === 'code' ? 'numeric' : 'text'}
                  maxLength={second === 'code' ? 6 : 40}
                  value={code}
                  onInput={(e) => setCode(e.currentTarget.value)}
                />
              )}
            </Field>
            <button
              type="button"
              class="link"
              onClick={() => {
                setSecond(second === 'code' ? 'recovery' : 'code');
                setCode('');
                action.clear();
              }}
            >
              {second === 'code' ? 'Use a recovery code instead' : 'Use the authenticator app instead'}
            </button>
          </>
        )}
        <ErrorLine error={action.error} />
        <button type="submit" disabled={action.busy}>
          Log in
        </button>
        <div class="or">or</div>
        {ssoError && <ErrorLine error={new Error(ssoError)} />}
        {state.data?.sso && (
          <a class="button secondary" href="/dashboard/api/sso/start">
            Sign in with {state.data.sso}
          </a>
        )}
        <ErrorLine error={passkey.error} />
        <button type="button" class="secondary" disabled={passkey.busy} onClick={() => void passkey.run()}>
          Sign in with a passkey
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
    props.onDone(await post('/dashboard/api/setup', { token: props.token, email, password }));
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
