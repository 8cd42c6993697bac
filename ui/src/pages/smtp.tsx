// SMTP submission for the chosen workspace: the settings an application copies (host, ports, TLS,
// user names), or how to turn submission on when it is off; and the workspace's SMTP credentials:
// the list, a new one (its secret shown once, never again) and revocation.
import { useState } from 'preact/hooks';
import { get, post } from '../api';
import {
  Badge,
  ConfirmButton,
  EnvField,
  ErrorLine,
  Facts,
  Field,
  Loading,
  Notice,
  Page,
  SecretOnce,
  Table,
  Time,
  useAction,
  useAsync,
} from '../components';
import type { ResponseOf } from '../../../src/contract/responses';
import type { Route } from '../routes';
import { useSelectionKey, useSession } from '../session';

type SmtpCredential = ResponseOf<'GET /v1/smtp-credentials'>['data'][number];

function SettingsCard() {
  const selection = useSelectionKey();
  const settings = useAsync(() => get('/dashboard/api/smtp/settings'), [selection]);
  if (settings.error) return <ErrorLine error={settings.error} />;
  if (!settings.data) return <Loading what="SMTP settings" />;
  const s = settings.data;
  return (
    <section class="card" aria-labelledby="smtp-settings">
      <h2 id="smtp-settings">Settings to copy</h2>
      {!s.enabled ? (
        <Notice tone="warn">
          SMTP submission is off on this box. Turn it on with the setting <code>submission.enabled</code> (
          <code>POSTERN_SUBMISSION_ENABLED=true</code>) and restart the daemon; it then listens on port 587 (STARTTLS) and 465 (TLS).
        </Notice>
      ) : (
        <Facts
          items={[
            ['Host', <code>{s.host}</code>],
            ['Port (STARTTLS)', <code>{s.starttlsPort}</code>],
            ['Port (TLS)', s.tlsPort ? <code>{s.tlsPort}</code> : <span class="muted">off</span>],
            ['Authentication', 'PLAIN or LOGIN'],
            [
              'User name',
              <>
                a credential's (<code>smtp_…</code>), or{' '}
                {s.usernames.map((u, i) => (
                  <>
                    {i > 0 && ' or '}
                    <code>{u}</code>
                  </>
                ))}
              </>,
            ],
            ['Password', "the credential's, or an API key with the send scope"],
          ]}
        />
      )}
    </section>
  );
}

function NewCredential(props: { onCreated(c: SmtpCredential, secret: string): void }) {
  const { me } = useSession();
  const [description, setDescription] = useState('');
  const [env, setEnv] = useState<'live' | 'test'>(me.selection?.env ?? 'live');
  const action = useAction(async () => {
    const r = await post('/dashboard/api/smtp/credentials', {
      env,
      description: description || undefined,
    });
    setDescription('');
    props.onCreated(r.credential, r.secret);
  });
  return (
    <form
      class="card"
      aria-labelledby="new-smtp-credential"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run();
      }}
    >
      <h2 id="new-smtp-credential">Create an SMTP credential</h2>
      <div class="row">
        <Field label="Description">
          {(id) => (
            <input id={id} maxLength={200} placeholder="gitea" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
          )}
        </Field>
        <EnvField value={env} onChange={setEnv} />
      </div>
      <p>
        <small class="muted">It may only submit mail, as a key with the send scope; a test credential submits test-mode messages.</small>
      </p>
      <ErrorLine error={action.error} />
      <button type="submit" disabled={action.busy}>
        Create credential
      </button>
    </form>
  );
}

function SmtpPage() {
  const selection = useSelectionKey();
  const credentials = useAsync(() => get('/dashboard/api/smtp/credentials'), [selection]);
  const [created, setCreated] = useState<{ credential: SmtpCredential; secret: string } | null>(null);
  return (
    <Page title="SMTP">
      <SettingsCard />
      {created ? (
        <div>
          <Facts items={[['User name', <code data-username>{created.credential.username}</code>]]} />
          <SecretOnce label="New SMTP password" value={created.secret} onDone={() => setCreated(null)} />
        </div>
      ) : (
        <NewCredential
          onCreated={(credential, secret) => {
            setCreated({ credential, secret });
            credentials.reload();
          }}
        />
      )}
      <h2>SMTP credentials of this workspace</h2>
      <ErrorLine error={credentials.error} />
      {!credentials.data ? (
        <Loading what="SMTP credentials" />
      ) : (
        <Table
          caption="SMTP credentials"
          rows={credentials.data.data}
          rowKey={(c) => c.id}
          empty="No SMTP credentials yet."
          columns={[
            { label: 'Description', cell: (c) => c.description || <span class="muted">—</span> },
            { label: 'User name', cell: (c) => <code>{c.username}</code> },
            { label: 'Environment', cell: (c) => <Badge tone={c.env === 'live' ? 'ok' : 'info'}>{c.env}</Badge> },
            { label: 'Created', cell: (c) => <Time iso={c.createdAt} /> },
            { label: 'Last used', cell: (c) => <Time iso={c.lastUsedAt} /> },
            {
              label: 'Revoked',
              cell: (c) =>
                c.revokedAt ? (
                  <Time iso={c.revokedAt} />
                ) : (
                  <ConfirmButton
                    small
                    danger
                    label={`Revoke ${c.description || c.username}`}
                    question={
                      <>
                        Revoke the SMTP credential <code>{c.username}</code>? Applications using it can no longer submit mail. This cannot
                        be undone.
                      </>
                    }
                    confirmLabel="Revoke"
                    onConfirm={async () => {
                      await post(`/dashboard/api/smtp/credentials/${encodeURIComponent(c.id)}/revoke`);
                      credentials.reload();
                    }}
                  />
                ),
            },
          ]}
        />
      )}
    </Page>
  );
}

export const routes: Route[] = [{ pattern: '/smtp', render: () => <SmtpPage /> }];
