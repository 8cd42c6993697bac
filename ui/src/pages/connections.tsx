// Provider connections of the chosen workspace and environment: how sms, push and web-push go out.
// The form is built from the provider's own settings (served by the dashboard); credentials are
// write-only — typed into password fields, sent once, and never shown again (the list names the
// secrets that are set, never their values).
import { useState } from 'preact/hooks';
import { del, get, post } from '../api';
import { Badge, ConfirmButton, ErrorLine, Field, Loading, Page, Table, Time, useAction, useAsync } from '../components';
import type { ProviderSpecView } from '../../../src/contract/dashboard';
import type { ResponseOf } from '../../../src/contract/responses';
import type { Route } from '../routes';
import { useSelectionKey, useSession } from '../session';

type ConnectionView = ResponseOf<'GET /v1/connections'>['data'][number];

const words = (camel: string) => camel.replace(/([A-Z])/g, ' $1').replace(/^./, (c) => c.toUpperCase());

function AddConnection(props: { providers: ProviderSpecView[]; onAdded(): void }) {
  const { me } = useSession();
  const [key, setKey] = useState(`${props.providers[0]?.channel}/${props.providers[0]?.name}`);
  const [name, setName] = useState('');
  const [values, setValues] = useState<Record<string, string>>({});
  const spec = props.providers.find((p) => `${p.channel}/${p.name}` === key);
  const action = useAction(async () => {
    if (!spec) return;
    await post('/dashboard/api/connections', { channel: spec.channel, provider: spec.name, name: name || undefined, values });
    setValues({});
    setName('');
    props.onAdded();
  });
  const set = (n: string, v: string) => setValues({ ...values, [n]: v });
  return (
    <form
      class="card"
      aria-labelledby="add-connection"
      autocomplete="off"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run();
      }}
    >
      <h2 id="add-connection">Add a connection ({me.selection?.env ?? 'live'})</h2>
      <div class="row">
        <Field label="Provider">
          {(id) => (
            <select
              id={id}
              value={key}
              onChange={(e) => {
                setKey(e.currentTarget.value);
                setValues({});
              }}
            >
              {props.providers.map((p) => (
                <option value={`${p.channel}/${p.name}`}>
                  {p.channel}: {p.name}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Connection name (optional)">
          {(id) => <input id={id} maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />}
        </Field>
      </div>
      {spec?.settings.map((s) => (
        <Field
          label={`${words(s.name)}${s.required ? '' : ' (optional)'}`}
          hint={`${s.describe}${s.default ? ` (default ${s.default})` : ''}${s.secret ? ' — write-only: never shown again' : ''}`}
        >
          {(id) =>
            s.multiline && !s.secret ? (
              <textarea
                id={id}
                rows={4}
                required={s.required}
                value={values[s.name] ?? ''}
                onInput={(e) => set(s.name, e.currentTarget.value)}
              />
            ) : (
              <input
                id={id}
                type={s.secret ? 'password' : s.kind === 'url' ? 'url' : 'text'}
                autocomplete={s.secret ? 'new-password' : 'off'}
                required={s.required}
                placeholder={s.default ?? undefined}
                value={values[s.name] ?? ''}
                onInput={(e) => set(s.name, e.currentTarget.value)}
              />
            )
          }
        </Field>
      ))}
      <ErrorLine error={action.error} />
      <button type="submit" disabled={action.busy || !spec}>
        Add connection
      </button>
    </form>
  );
}

function settingsText(c: ConnectionView): string {
  const entries = Object.entries(c.settings ?? {});
  return entries.length ? entries.map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ') : '—';
}

function ConnectionsPage() {
  const selection = useSelectionKey();
  const list = useAsync(() => get('/v1/connections'), [selection]);
  const providers = useAsync(() => get('/dashboard/api/connections/providers'), []);
  return (
    <Page title="Connections">
      <p class="muted">
        Live sms, push and web-push messages go out through the workspace's connection for their channel (one per channel and environment).
        Test messages never leave Postern.
      </p>
      <ErrorLine error={list.error ?? providers.error} />
      {!list.data ? (
        <Loading what="connections" />
      ) : (
        <Table
          caption="Connections"
          rows={list.data.data}
          rowKey={(c) => c.id ?? `${c.channel}-${c.env}`}
          columns={[
            { label: 'Channel', cell: (c) => c.channel },
            { label: 'Provider', cell: (c) => c.provider },
            { label: 'Name', cell: (c) => c.name ?? <span class="muted">configured in the daemon</span> },
            { label: 'Settings', cell: (c) => <span class="mono">{settingsText(c)}</span> },
            {
              label: 'Credentials',
              cell: (c) =>
                c.credentials?.length ? (
                  <span class="inline-actions">
                    {c.credentials.map((k) => (
                      <Badge tone="ok">{k.name} set</Badge>
                    ))}
                  </span>
                ) : (
                  <span class="muted">—</span>
                ),
            },
            { label: 'Added', cell: (c) => <Time iso={c.createdAt} /> },
            {
              label: 'Actions',
              cell: (c) =>
                c.id && c.channel !== 'email' ? (
                  <ConfirmButton
                    small
                    danger
                    label={`Remove ${c.name ?? c.provider}`}
                    question={`Remove the ${c.channel} connection “${c.name ?? c.provider}”? Live ${c.channel} messages fail until another is added.`}
                    confirmLabel="Remove"
                    onConfirm={async () => {
                      await del(`/dashboard/api/connections/${encodeURIComponent(c.id)}`);
                      list.reload();
                    }}
                  />
                ) : (
                  <span class="muted">—</span>
                ),
            },
          ]}
        />
      )}
      {providers.data && <AddConnection providers={providers.data.data} onAdded={list.reload} />}
    </Page>
  );
}

export const routes: Route[] = [{ pattern: '/connections', render: () => <ConnectionsPage /> }];
