// The operator's own account: the second factor (an authenticator app with recovery codes) set up,
// renewed or removed, and passkeys added (the browser's WebAuthn ceremony) or removed. When the box requires a second factor and the operator has none, the shell
// shows this page in place of every other until one is set up.
import { startRegistration, type PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/browser';
import { useState } from 'preact/hooks';
import { del, get, post } from '../api';
import { ConfirmButton, CopyButton, ErrorLine, Facts, Field, Loading, Notice, Page, Table, Time, useAction, useAsync } from '../components';
import type { TotpEnrollment } from '../../../src/contract/dashboard';
import type { Route } from '../routes';
import { useSession } from '../session';

type Enrollment = TotpEnrollment;

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
  const start = useAction(async () => setEnrollment(await post('/dashboard/api/account/second-factor/totp')));
  const confirm = useAction(async () => {
    const { recoveryCodes } = await post('/dashboard/api/account/second-factor/totp/confirm', {
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

function SecondFactorCard() {
  const session = useSession();
  const status = useAsync(() => get('/dashboard/api/account/second-factor'), []);
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
            onProof={async (proof) => setCodes((await post('/dashboard/api/account/second-factor/recovery-codes', proof)).recoveryCodes)}
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
          <p>
            {status.data.passkeys > 0
              ? status.data.required
                ? 'No authenticator app: your passkeys are your second factor, so you sign in with one (the password alone is refused).'
                : 'No authenticator app: the password alone signs you in, and so does each passkey.'
              : 'Off: the password alone signs you in. An authenticator app adds a code that changes every 30 seconds.'}
          </p>
          <SetUpApp onDone={setCodes} />
        </>
      )}
    </section>
  );
}

/** Passkeys: each signs in on its own, with the device's lock (fingerprint, face, PIN). */
function PasskeysCard(props: { onChange(): void }) {
  const list = useAsync(() => get('/dashboard/api/account/passkeys'), []);
  const [name, setName] = useState('');
  const add = useAction(async () => {
    // The options' shape is WebAuthn's (the W3C's), not the contract's.
    const optionsJSON = (await post('/dashboard/api/account/passkeys/options')) as PublicKeyCredentialCreationOptionsJSON;
    const response = await startRegistration({ optionsJSON });
    await post('/dashboard/api/account/passkeys', { response, name: name.trim() });
    setName('');
    list.reload();
    props.onChange();
  });
  return (
    <section class="card" aria-labelledby="passkeys">
      <h2 id="passkeys">Passkeys</h2>
      <p>A passkey signs you in without the password: the device it lives on (a phone, a laptop, a security key) asks for its lock.</p>
      <ErrorLine error={list.error} />
      {!list.data ? (
        <Loading what="passkeys" />
      ) : (
        <Table
          caption="Passkeys"
          rows={list.data.data}
          rowKey={(p) => p.id}
          empty="No passkey yet."
          columns={[
            { label: 'Name', cell: (p) => p.name },
            { label: 'Added', cell: (p) => <Time iso={p.createdAt} /> },
            { label: 'Last used', cell: (p) => <Time iso={p.lastUsedAt} /> },
            {
              label: 'Actions',
              cell: (p) => (
                <ConfirmButton
                  small
                  danger
                  label={`Remove the passkey ${p.name}`}
                  question={`Remove the passkey ${p.name}? It no longer signs you in.`}
                  confirmLabel="Remove"
                  onConfirm={async () => {
                    await del(`/dashboard/api/account/passkeys/${encodeURIComponent(p.id)}`);
                    list.reload();
                    props.onChange();
                  }}
                />
              ),
            },
          ]}
        />
      )}
      <form
        class="inline-form"
        aria-label="Add a passkey"
        onSubmit={(e) => {
          e.preventDefault();
          void add.run();
        }}
      >
        <Field label="Passkey name" hint="Which device it is on, to tell them apart.">
          {(id) => <input id={id} required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />}
        </Field>
        <ErrorLine error={add.error} />
        <button type="submit" disabled={add.busy}>
          Add a passkey
        </button>
      </form>
    </section>
  );
}

function AccountPage() {
  const session = useSession();
  const { me } = session;
  // A passkey added or removed changes what the second factor's card says.
  const [passkeysChanged, setPasskeysChanged] = useState(0);
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
          [
            'Signed in with',
            me.signedInWith
              .replace('+', ' and ')
              .replace('totp', 'authenticator app')
              .replace('passkey', 'a passkey')
              .replace('sso', 'single sign-on'),
          ],
        ]}
      />
      <SecondFactorCard key={passkeysChanged} />
      <PasskeysCard
        onChange={() => {
          setPasskeysChanged((n) => n + 1);
          void session.refresh();
        }}
      />
    </Page>
  );
}

export const routes: Route[] = [{ pattern: '/account', render: () => <AccountPage /> }];
