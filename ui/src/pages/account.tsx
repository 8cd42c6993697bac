// The operator's own account: the second factor (an authenticator app with recovery codes) set up,
// renewed or removed. When the box requires a second factor and the operator has none, the shell
// shows this page in place of every other until one is set up.
import { useState } from 'preact/hooks';
import { get, post } from '../api';
import { CopyButton, ErrorLine, Facts, Field, Loading, Notice, Page, useAction, useAsync } from '../components';
import type { Route } from '../routes';
import { useSession } from '../session';

interface Status {
  totp: boolean;
  recoveryCodesLeft: number;
  required: boolean;
}
interface Enrollment {
  secret: string;
  uri: string;
  qrSvg: string;
}

/** The key as apps show it for typing: groups of four. */
const grouped = (secret: string) => secret.replace(/(.{4})/g, '$1 ').trim();

function RecoveryCodes(props: { codes: string[]; onDone(): void }) {
  return (
    <div class="secret" role="region" aria-label="Recovery codes">
      <p>
        <strong>Recovery codes</strong> — shown only this once. Each signs you in once in place of a code from the app: keep them where you
        keep passwords, away from the phone.
      </p>
      <ul class="recovery-codes" data-secret>
        {props.codes.map((c) => (
          <li>
            <code>{c}</code>
          </li>
        ))}
      </ul>
      <div class="inline-actions">
        <CopyButton text={props.codes.join('\n')} label="Copy the recovery codes" />
        <button type="button" class="secondary" onClick={props.onDone}>
          I have saved them
        </button>
      </div>
    </div>
  );
}

/** A code from the app, or a recovery code, to prove the factor before changing it. */
function ProofForm(props: { label: string; danger?: boolean; onProof(proof: { code?: string; recoveryCode?: string }): Promise<unknown> }) {
  const [code, setCode] = useState('');
  const action = useAction(async () => {
    const text = code.trim();
    await props.onProof(/^\d{6}$/.test(text) ? { code: text } : { recoveryCode: text });
    setCode('');
  });
  return (
    <form
      class="inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run();
      }}
    >
      <Field label={`${props.label}: code from the app, or a recovery code`}>
        {(id) => (
          <input
            id={id}
            autocomplete="one-time-code"
            required
            maxLength={40}
            value={code}
            onInput={(e) => setCode(e.currentTarget.value)}
          />
        )}
      </Field>
      <ErrorLine error={action.error} />
      <button type="submit" class={props.danger ? 'danger' : 'secondary'} disabled={action.busy}>
        {props.label}
      </button>
    </form>
  );
}

function SetUpApp(props: { onDone(codes: string[]): void }) {
  const [enrollment, setEnrollment] = useState<Enrollment | null>(null);
  const [code, setCode] = useState('');
  const start = useAction(async () => setEnrollment(await post<Enrollment>('/dashboard/api/account/second-factor/totp')));
  const confirm = useAction(async () => {
    const { recoveryCodes } = await post<{ recoveryCodes: string[] }>('/dashboard/api/account/second-factor/totp/confirm', {
      code: code.trim(),
    });
    props.onDone(recoveryCodes);
  });
  if (!enrollment)
    return (
      <div>
        <ErrorLine error={start.error} />
        <button type="button" disabled={start.busy} onClick={() => void start.run()}>
          Set up an authenticator app
        </button>
      </div>
    );
  return (
    <form
      class="card"
      aria-label="Set up an authenticator app"
      onSubmit={(e) => {
        e.preventDefault();
        void confirm.run();
      }}
    >
      <p>Scan the code with an authenticator app (1Password, Google Authenticator, Aegis, …), or type the key into it.</p>
      <img
        class="qr"
        alt="QR code of the authenticator key"
        src={`data:image/svg+xml;base64,${btoa(enrollment.qrSvg)}`}
        width={200}
        height={200}
      />
      <Facts
        items={[
          ['Key', <code data-totp-key>{grouped(enrollment.secret)}</code>],
          ['Kind', 'time-based (TOTP), 6 digits, every 30 seconds'],
        ]}
      />
      <Field label="Code from the app">
        {(id) => (
          <input
            id={id}
            inputMode="numeric"
            autocomplete="one-time-code"
            pattern="[0-9]{6}"
            maxLength={6}
            required
            value={code}
            onInput={(e) => setCode(e.currentTarget.value)}
          />
        )}
      </Field>
      <ErrorLine error={confirm.error} />
      <button type="submit" disabled={confirm.busy}>
        Turn on
      </button>
    </form>
  );
}

export function SecondFactorCard() {
  const session = useSession();
  const status = useAsync(() => get<Status>('/dashboard/api/account/second-factor'), []);
  const [codes, setCodes] = useState<string[] | null>(null);
  const done = () => {
    status.reload();
    void session.refresh();
  };
  return (
    <section class="card" aria-labelledby="second-factor">
      <h2 id="second-factor">Second factor</h2>
      <ErrorLine error={status.error} />
      {codes ? (
        <RecoveryCodes
          codes={codes}
          onDone={() => {
            setCodes(null);
            done();
          }}
        />
      ) : !status.data ? (
        <Loading what="the second factor" />
      ) : status.data.totp ? (
        <>
          <Notice tone="ok">
            On: you sign in with a code from your authenticator app. {status.data.recoveryCodesLeft} of 10 recovery codes left.
          </Notice>
          <ProofForm
            label="New recovery codes"
            onProof={async (proof) =>
              setCodes(
                (await post<{ recoveryCodes: string[] }>('/dashboard/api/account/second-factor/recovery-codes', proof)).recoveryCodes,
              )
            }
          />
          <ProofForm
            label="Remove the app"
            danger
            onProof={async (proof) => {
              await post('/dashboard/api/account/second-factor/remove', proof);
              done();
            }}
          />
        </>
      ) : (
        <>
          <p>Off: the password alone signs you in. An authenticator app adds a code that changes every 30 seconds.</p>
          <SetUpApp onDone={setCodes} />
        </>
      )}
    </section>
  );
}

function AccountPage() {
  const { me } = useSession();
  return (
    <Page title="Account">
      {me.mustSetUpSecondFactor && (
        <Notice tone="warn">
          This box requires a second factor of every operator: set up an authenticator app to open the other pages.
        </Notice>
      )}
      <Facts
        items={[
          ['Email', me.operator.email],
          ['Role', me.operator.role],
          ['Signed in with', me.signedInWith.replace('+', ' and ').replace('totp', 'authenticator app')],
        ]}
      />
      <SecondFactorCard />
    </Page>
  );
}

export const routes: Route[] = [{ pattern: '/account', render: () => <AccountPage /> }];
