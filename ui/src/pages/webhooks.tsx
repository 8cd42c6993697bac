// Webhook endpoints of the chosen workspace and environment: the list and a new endpoint (its
// signing secret shown once), and per endpoint its settings, secret rotation (the new secret shown
// once), enable/disable, removal, and the delivery log with every attempt and a replay button.
import { useState } from 'preact/hooks';
import { EVENT_TYPES, WEBHOOK_FORMATS, type WebhookFormat } from '../../../src/contract/webhooks';
import { del, get, patch, post, query } from '../api';
import {
  Badge,
  ConfirmButton,
  ErrorLine,
  Facts,
  Field,
  Loading,
  Notice,
  Page,
  Pager,
  SecretOnce,
  StatusBadge,
  Table,
  Time,
  useAction,
  useAsync,
} from '../components';
import type { ResponseOf } from '../../../src/contract/responses';
import type { Route } from '../routes';
import { Link, navigate } from '../router';
import { useSelectionKey } from '../session';

type Endpoint = ResponseOf<'GET /v1/webhooks/:id'>;
type Delivery = ResponseOf<'GET /v1/webhooks/:id/deliveries'>['data'][number];

const endpointState = (e: Endpoint) =>
  !e.enabled ? <StatusBadge status="disabled" /> : e.failingSince ? <Badge tone="warn">failing</Badge> : <StatusBadge status="active" />;

function EventChecks(props: { chosen: string[]; onChange(events: string[]): void }) {
  return (
    <fieldset>
      <legend>Events</legend>
      <div class="checks">
        {EVENT_TYPES.map((ev) => (
          <label>
            <input
              type="checkbox"
              checked={props.chosen.includes(ev)}
              onChange={(e) => props.onChange(e.currentTarget.checked ? [...props.chosen, ev] : props.chosen.filter((x) => x !== ev))}
            />{' '}
            {ev}
          </label>
        ))}
      </div>
      <small class="muted">{props.chosen.length === 0 ? 'None ticked: every event type, including ones added later.' : ''}</small>
    </fieldset>
  );
}

// The payload formats (docs/api/webhooks.md, "Payload formats"): Postern's own, or a hosted
// vendor's shape for consumers written against it.
const FORMAT_NAMES: Record<WebhookFormat, string> = {
  postern: 'Postern (Standard Webhooks)',
  sendgrid: 'SendGrid Event Webhook (signed with ECDSA)',
  postmark: 'Postmark',
  resend: 'Resend (signed by Svix’s scheme)',
};
const formatName = (format: WebhookFormat) => FORMAT_NAMES[format];

function NewEndpoint(props: { onCreated(endpoint: Endpoint, secret: string): void }) {
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [format, setFormat] = useState('postern');
  const [events, setEvents] = useState<string[]>([]);
  const action = useAction(async () => {
    const r = await post('/v1/webhooks', {
      url,
      ...(description ? { description } : {}),
      format,
      events: events.length && format === 'postern' ? events : ['*'],
    });
    setUrl('');
    setDescription('');
    setFormat('postern');
    setEvents([]);
    props.onCreated(r, r.secret);
  });
  return (
    <form
      class="card"
      aria-labelledby="new-endpoint"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run();
      }}
    >
      <h2 id="new-endpoint">Add an endpoint</h2>
      <div class="row">
        <Field label="URL">
          {(id) => (
            <input
              id={id}
              type="url"
              required
              placeholder="https://example.com/hooks/postern"
              value={url}
              onInput={(e) => setUrl(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Description (optional)">
          {(id) => <input id={id} maxLength={200} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />}
        </Field>
      </div>
      <Field label="Payload format">
        {(id) => (
          <select id={id} value={format} onChange={(e) => setFormat(e.currentTarget.value)}>
            {WEBHOOK_FORMATS.map((value) => (
              <option value={value}>{FORMAT_NAMES[value]}</option>
            ))}
          </select>
        )}
      </Field>
      {format === 'postern' ? (
        <EventChecks chosen={events} onChange={setEvents} />
      ) : (
        <p class="muted">Every event this format has a shape for is sent; the others are not.</p>
      )}
      <ErrorLine error={action.error} />
      <button type="submit" disabled={action.busy}>
        Add endpoint
      </button>
    </form>
  );
}

function WebhooksPage() {
  const selection = useSelectionKey();
  const list = useAsync(() => get('/v1/webhooks'), [selection]);
  const [secret, setSecret] = useState<string | null>(null);
  return (
    <Page title="Webhooks">
      {secret ? (
        <SecretOnce label="Signing secret" value={secret} onDone={() => setSecret(null)} />
      ) : (
        <NewEndpoint
          onCreated={(_e, s) => {
            setSecret(s);
            list.reload();
          }}
        />
      )}
      <h2>Endpoints</h2>
      <ErrorLine error={list.error} />
      {!list.data ? (
        <Loading what="endpoints" />
      ) : (
        <Table
          caption="Webhook endpoints"
          rows={list.data.data}
          rowKey={(e) => e.id}
          empty="No endpoint yet: events are kept, and delivered once one is added."
          columns={[
            { label: 'URL', cell: (e) => <Link href={`/webhooks/${encodeURIComponent(e.id)}`}>{e.url}</Link> },
            { label: 'Description', cell: (e) => e.description || <span class="muted">—</span> },
            { label: 'Events', cell: (e) => (e.events.includes('*') ? 'all' : e.events.join(', ')) },
            { label: 'Format', cell: (e) => e.format },
            { label: 'State', cell: endpointState },
            { label: 'Created', cell: (e) => <Time iso={e.createdAt} /> },
          ]}
        />
      )}
    </Page>
  );
}

function pretty(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

function AttemptDetails(props: { endpoint: Endpoint; delivery: Delivery }) {
  const { endpoint, delivery: d } = props;
  const request = useAsync(
    () => get(`/dashboard/api/webhooks/${encodeURIComponent(endpoint.id)}/deliveries/${encodeURIComponent(d.id)}/request`),
    [endpoint.id, d.id],
  );
  const headers = request.data ? Object.entries(request.data.headers).map(([k, v]) => `${k}: ${v}`) : [];
  return (
    <section class="card" aria-labelledby="delivery-details">
      <h3 id="delivery-details">
        Delivery <code>{d.id}</code> of {d.eventType}
      </h3>
      <Facts
        items={[
          ['Event', <code>{d.eventId}</code>],
          ['Status', <StatusBadge status={d.status === 'succeeded' ? 'delivered' : d.status} />],
          ['Attempts', String(d.attemptCount)],
          ['Next attempt', d.nextAttemptAt ? <Time iso={d.nextAttemptAt} /> : null],
          ['Delivered', d.deliveredAt ? <Time iso={d.deliveredAt} /> : null],
        ]}
      />
      <ErrorLine error={request.error} />
      {d.attempts.length === 0 && <p class="muted">Not attempted yet.</p>}
      <ol class="attempts">
        {d.attempts.map((a, i) => (
          <li>
            <h4>
              Attempt {i + 1}, <Time iso={a.at} />
            </h4>
            <div class="exchange">
              <div>
                <strong>Request</strong>
                <pre tabIndex={0} aria-label={`Request of attempt ${i + 1}`}>
                  {request.data
                    ? [
                        `${request.data.method} ${request.data.url}`,
                        ...headers,
                        `webhook-timestamp: ${Math.floor(new Date(a.at).getTime() / 1000)}`,
                        'webhook-signature: v1,… (Standard Webhooks, signed with the endpoint secret)',
                        '',
                        pretty(request.data.body),
                      ].join('\n')
                    : 'Loading…'}
                </pre>
              </div>
              <div>
                <strong>Response</strong>
                <pre
                  tabIndex={0}
                  aria-label={`Response of attempt ${i + 1}`}
                >{`${a.statusCode !== null ? `HTTP ${a.statusCode}` : 'no response'}${a.error ? `\n${a.error}` : ''}\nafter ${a.durationMs} ms\n(the response body is not kept)`}</pre>
              </div>
            </div>
          </li>
        ))}
      </ol>
    </section>
  );
}

function Deliveries(props: { endpoint: Endpoint }) {
  const base = `/v1/webhooks/${encodeURIComponent(props.endpoint.id)}` as const;
  const [status, setStatus] = useState('');
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [open, setOpen] = useState<string | null>(null);
  const [notice, setNotice] = useState('');
  const before = cursors[cursors.length - 1];
  const limit = 25;
  const list = useAsync(() => get(`${base}/deliveries${query({ status, before, limit })}`), [status, before]);
  const replay = useAction(async (d: Delivery) => {
    await post(`${base}/deliveries/${encodeURIComponent(d.id)}/retry`);
    setNotice(`Delivery ${d.id} queued to be sent again.`);
    list.reload();
  });
  const rows = list.data?.data ?? [];
  const current = rows.find((d) => d.id === open);
  return (
    <>
      <h2>Delivery log</h2>
      <div class="row">
        <Field label="Delivery status">
          {(id) => (
            <select
              id={id}
              value={status}
              onChange={(e) => {
                setStatus(e.currentTarget.value);
                setCursors([undefined]);
              }}
            >
              <option value="">any</option>
              <option value="pending">pending</option>
              <option value="succeeded">succeeded</option>
              <option value="failed">failed</option>
            </select>
          )}
        </Field>
        <button type="button" class="secondary" onClick={list.reload}>
          Refresh
        </button>
      </div>
      <ErrorLine error={list.error ?? replay.error} />
      {notice && <Notice>{notice}</Notice>}
      {!list.data ? (
        <Loading what="deliveries" />
      ) : (
        <>
          <Table
            caption="Deliveries, newest first"
            rows={rows}
            rowKey={(d) => d.id}
            empty="No delivery yet."
            columns={[
              { label: 'Event', cell: (d) => d.eventType },
              { label: 'Status', cell: (d) => <StatusBadge status={d.status === 'succeeded' ? 'delivered' : d.status} /> },
              { label: 'Attempts', cell: (d) => String(d.attemptCount), class: 'num' },
              { label: 'Last response', cell: (d) => (d.lastStatusCode !== null ? `HTTP ${d.lastStatusCode}` : (d.lastError ?? '—')) },
              { label: 'Created', cell: (d) => <Time iso={d.createdAt} /> },
              {
                label: 'Actions',
                cell: (d) => (
                  <span class="inline-actions">
                    <button
                      type="button"
                      class="secondary small"
                      aria-expanded={open === d.id}
                      aria-label={`${open === d.id ? 'Hide' : 'Show'} attempts of ${d.id}`}
                      onClick={() => setOpen(open === d.id ? null : d.id)}
                    >
                      {open === d.id ? 'Hide' : 'Attempts'}
                    </button>
                    <button
                      type="button"
                      class="secondary small"
                      aria-label={`Replay ${d.id}`}
                      disabled={replay.busy}
                      onClick={() => void replay.run(d)}
                    >
                      Replay
                    </button>
                  </span>
                ),
              },
            ]}
          />
          <Pager
            hasPrevious={cursors.length > 1}
            hasNext={rows.length === limit}
            onPrevious={() => setCursors(cursors.slice(0, -1))}
            onNext={() => setCursors([...cursors, rows[rows.length - 1]?.createdAt])}
          />
          {current && <AttemptDetails endpoint={props.endpoint} delivery={current} />}
        </>
      )}
    </>
  );
}

function EndpointPage(props: { id: string }) {
  const selection = useSelectionKey();
  const base = `/v1/webhooks/${encodeURIComponent(props.id)}` as const;
  const ep = useAsync(() => get(base), [selection, props.id]);
  const [secret, setSecret] = useState<string | null>(null);
  const toggle = useAction(async (enabled: boolean) => {
    await patch(base, { enabled });
    ep.reload();
  });
  const e = ep.data;
  return (
    <Page
      title="Webhook endpoint"
      actions={
        e && (
          <>
            <ConfirmButton
              label="Rotate secret"
              question="Rotate the signing secret? The old one keeps signing beside the new one for a while, so receivers can switch over."
              confirmLabel="Rotate"
              onConfirm={async () => {
                const r = await post(`${base}/rotate-secret`);
                setSecret(r.secret);
                ep.reload();
              }}
            />
            <button type="button" class="secondary" disabled={toggle.busy} onClick={() => void toggle.run(!e.enabled)}>
              {e.enabled ? 'Disable' : 'Enable'}
            </button>
            <ConfirmButton
              danger
              label="Delete endpoint"
              question={`Delete the endpoint ${e.url}? Its pending deliveries are dropped.`}
              confirmLabel="Delete"
              onConfirm={async () => {
                await del(base);
                navigate('/webhooks');
              }}
            />
          </>
        )
      }
    >
      <p>
        <Link href="/webhooks">← All endpoints</Link>
      </p>
      <ErrorLine error={ep.error ?? toggle.error} />
      {secret && <SecretOnce label="New signing secret" value={secret} onDone={() => setSecret(null)} />}
      {!e ? (
        <Loading what="the endpoint" />
      ) : (
        <>
          <Facts
            items={[
              ['URL', <code>{e.url}</code>],
              ['Description', e.description || null],
              ['Events', e.events.includes('*') ? 'all' : e.events.join(', ')],
              ['Payload format', formatName(e.format)],
              ['Verification key', e.verificationKey ? <code class="wrap">{e.verificationKey}</code> : null],
              ['State', endpointState(e)],
              ['Disabled because', e.disabledReason],
              ['Failing since', e.failingSince ? <Time iso={e.failingSince} /> : null],
              ['Previous secret valid until', e.previousSecretExpiresAt ? <Time iso={e.previousSecretExpiresAt} /> : null],
              ['Created', <Time iso={e.createdAt} />],
            ]}
          />
          <Deliveries endpoint={e} />
        </>
      )}
    </Page>
  );
}

export const routes: Route[] = [
  { pattern: '/webhooks', render: () => <WebhooksPage /> },
  { pattern: '/webhooks/:id', render: (p) => <EndpointPage id={p.id} /> },
];
