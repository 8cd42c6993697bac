// API keys of the chosen workspace: the list, a new key (its secret shown once, never again) and
// revocation. The environment of a new key is chosen in the form (live or test), not the top bar.
import { useState } from 'preact/hooks';
import { get, post } from '../api';
import {
  Badge,
  ConfirmButton,
  EnvField,
  ErrorLine,
  Field,
  Loading,
  Page,
  SecretOnce,
  Table,
  Time,
  useAction,
  useAsync,
} from '../components';
import { BOX_SCOPES, SCOPES, type Scope } from '../../../src/contract/vocabulary';
import type { Route } from '../routes';
import { useSelectionKey, useSession } from '../session';

/** What each scope lets a key do, for the new-key form. */
const SCOPE_HINTS: Record<Scope, string> = {
  read: 'read messages, templates, suppressions, connections',
  send: 'send messages, manage suppressions',
  cancel: 'cancel scheduled or queued messages',
  inbound: 'inbound domains, addresses and received mail',
  webhooks: 'webhook endpoints and deliveries',
  // The box's nodes (GET /v1/nodes): never part of full access; only an owner may grant it.
  cluster: 'the cluster nodes (hosts, pids, health); owners only',
};
const SCOPE_CHOICES = SCOPES.map((name) => ({ name, hint: SCOPE_HINTS[name], ownerOnly: BOX_SCOPES.includes(name) }));

function NewKey(props: { onCreated(secret: string): void }) {
  const { me } = useSession();
  const [name, setName] = useState('');
  const [env, setEnv] = useState<'live' | 'test'>(me.selection?.env ?? 'live');
  const [scopes, setScopes] = useState<string[]>([]);
  const action = useAction(async () => {
    const r = await post('/dashboard/api/keys', { name: name || undefined, env, scopes });
    setName('');
    setScopes([]);
    props.onCreated(r.secret);
  });
  return (
    <form
      class="card"
      aria-labelledby="new-key"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run();
      }}
    >
      <h2 id="new-key">Create a key</h2>
      <div class="row">
        <Field label="Name">
          {(id) => (
            <input id={id} maxLength={100} placeholder="billing service" value={name} onInput={(e) => setName(e.currentTarget.value)} />
          )}
        </Field>
        <EnvField value={env} onChange={setEnv} />
      </div>
      <fieldset>
        <legend>Scopes</legend>
        <div class="checks">
          {SCOPE_CHOICES.filter((s) => !s.ownerOnly || me.operator.role === 'owner').map((s) => (
            <label title={s.hint}>
              <input
                type="checkbox"
                checked={scopes.includes(s.name)}
                onChange={(e) => setScopes(e.currentTarget.checked ? [...scopes, s.name] : scopes.filter((x) => x !== s.name))}
              />{' '}
              {s.name}
            </label>
          ))}
        </div>
        <small class="muted">
          {scopes.length === 0
            ? 'No scope ticked: the key is unscoped and has full access to this workspace.'
            : `The key may only ${scopes.join(', ')}.`}
        </small>
      </fieldset>
      <ErrorLine error={action.error} />
      <button type="submit" disabled={action.busy}>
        Create key
      </button>
    </form>
  );
}

function KeysPage() {
  const selection = useSelectionKey();
  const keys = useAsync(() => get('/dashboard/api/keys'), [selection]);
  const [secret, setSecret] = useState<string | null>(null);
  return (
    <Page title="API keys">
      {secret ? (
        <SecretOnce label="New API key" value={secret} onDone={() => setSecret(null)} />
      ) : (
        <NewKey
          onCreated={(s) => {
            setSecret(s);
            keys.reload();
          }}
        />
      )}
      <h2>Keys of this workspace</h2>
      <ErrorLine error={keys.error} />
      {!keys.data ? (
        <Loading what="keys" />
      ) : (
        <Table
          caption="API keys"
          rows={keys.data.data}
          rowKey={(k) => k.id}
          empty="No keys yet."
          columns={[
            { label: 'Name', cell: (k) => k.name || <span class="muted">—</span> },
            { label: 'Prefix', cell: (k) => <code>{k.prefix}…</code> },
            { label: 'Environment', cell: (k) => <Badge tone={k.env === 'live' ? 'ok' : 'info'}>{k.env}</Badge> },
            { label: 'Scopes', cell: (k) => (k.scopes ? k.scopes.join(', ') : <Badge tone="warn">full access</Badge>) },
            { label: 'Created', cell: (k) => <Time iso={k.createdAt} /> },
            { label: 'Last used', cell: (k) => <Time iso={k.lastUsedAt} /> },
            {
              label: 'Revoked',
              cell: (k) =>
                k.revokedAt ? (
                  <Time iso={k.revokedAt} />
                ) : (
                  <ConfirmButton
                    small
                    danger
                    label={`Revoke ${k.name || k.prefix}`}
                    question={
                      <>
                        Revoke the key <code>{k.prefix}…</code>? Requests made with it are refused from now on. This cannot be undone.
                      </>
                    }
                    confirmLabel="Revoke"
                    onConfirm={async () => {
                      await post(`/dashboard/api/keys/${encodeURIComponent(k.id)}/revoke`);
                      keys.reload();
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

export const routes: Route[] = [{ pattern: '/keys', render: () => <KeysPage /> }];
