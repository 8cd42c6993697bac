// Inbound: received mail (list by address, paged by receivedAt; the detail with the sanitised view
// of its HTML in a sandboxed iframe served by /dashboard/view/inbound, text, stripped reply,
// headers, SPF/DKIM/DMARC/ARC verdicts, attachments and raw source as downloads), the domains
// (shared and custom; claim with the existing-MX acknowledgement, the records to publish with their
// checks, re-check; a sending domain's DKIM keys and their rotation, dkim-keys.tsx) and the addresses (create, catch-all, forwarding, webhook binding, deactivate).
import { useState } from 'preact/hooks';
import { ApiError, get, post, query, del } from '../api';
import {
  Badge,
  ConfirmButton,
  CopyButton,
  ErrorLine,
  Facts,
  IsolatedFrame,
  Field,
  Loading,
  Notice,
  Page,
  Pager,
  StatusBadge,
  Table,
  Tabs,
  Time,
  formatBytes,
  useAction,
  useAsync,
  type Tone,
} from '../components';
import { Link, navigate, useRoute } from '../router';
import { DkimKeys } from './dkim-keys';
import { DomainChecks, DomainReports } from './domain-health';
import type { ResponseOf } from '../../../src/contract/responses';
import type { Route } from '../routes';
import { useSelectionKey, useSession } from '../session';

type Detail = ResponseOf<'GET /v1/inbound/messages/:id'>;
type Mailbox = Detail['from'];
const mailbox = (m: Mailbox | null | undefined) => (!m ? '' : m.name ? `${m.name} <${m.email}>` : m.email);

type Address = ResponseOf<'POST /v1/inbound/addresses/:id/deactivate'>;

const msgPath = <R extends string = ''>(id: string, rest = '' as R) => `/v1/inbound/messages/${encodeURIComponent(id)}${rest}` as const;

function Sections(props: { current: 'received' | 'addresses' | 'domains' }) {
  const items: [typeof props.current, string, string][] = [
    ['received', '/inbound', 'Received mail'],
    ['addresses', '/inbound/addresses', 'Addresses'],
    ['domains', '/inbound/domains', 'Domains'],
  ];
  return (
    <nav class="tabs" aria-label="Inbound sections">
      {items.map(([key, href, label]) => (
        <Link href={href} class={key === props.current ? 'tab current' : 'tab'} aria-current={key === props.current ? 'page' : undefined}>
          {label}
        </Link>
      ))}
    </nav>
  );
}

const PAGE = 50;

function ReceivedList() {
  const sel = useSelectionKey();
  const { params } = useRoute();
  const [filter, setFilter] = useState(params.get('address') ?? '');
  // The filter is an address id: every address of every domain, to choose from.
  const addresses = useAsync(async () => {
    const { domains } = await get('/v1/inbound/domains');
    const lists = await Promise.all(
      domains.map((d) => get(`/v1/inbound/addresses${query({ domainId: d.kind === 'shared' ? '' : d.id })}`)),
    );
    return lists.flatMap((l) => l.addresses);
  }, [sel]);
  // The `before` cursors of the pages came through; the last is the current page's.
  const [cursors, setCursors] = useState<string[]>([]);
  const before = cursors[cursors.length - 1];
  const list = useAsync(() => get(`/v1/inbound/messages${query({ address: filter, before, limit: PAGE })}`), [sel, filter, before]);
  const rows = list.data?.messages ?? [];
  return (
    <Page title="Inbound">
      <Sections current="received" />
      <h2>Received mail</h2>
      <div class="row">
        <Field label="Address">
          {(id) => (
            <select
              id={id}
              value={filter}
              onChange={(e) => {
                setCursors([]);
                setFilter(e.currentTarget.value);
              }}
            >
              <option value="">Every address</option>
              {(addresses.data ?? []).map((a) => (
                <option value={a.id}>{a.address}</option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <ErrorLine error={list.error} />
      {list.data ? (
        <Table
          caption="Received mail"
          rows={rows}
          rowKey={(r) => r.id}
          empty="No mail received yet."
          columns={[
            { label: 'Received', cell: (r) => <Time iso={r.receivedAt} /> },
            { label: 'From', cell: (r) => r.from },
            { label: 'Subject', cell: (r) => <Link href={`/inbound/messages/${r.id}`}>{r.subject || '(no subject)'}</Link> },
            { label: 'Status', cell: (r) => <StatusBadge status={r.status} /> },
            { label: 'Size', cell: (r) => formatBytes(r.sizeBytes) },
          ]}
        />
      ) : (
        !list.error && <Loading what="received mail" />
      )}
      <Pager
        hasPrevious={cursors.length > 0}
        hasNext={rows.length === PAGE}
        onPrevious={() => setCursors(cursors.slice(0, -1))}
        onNext={() => setCursors([...cursors, rows[rows.length - 1].receivedAt])}
      />
    </Page>
  );
}

function verdictTone(result: string): Tone {
  if (result === 'pass' || result === 'ham' || result === 'clean') return 'ok';
  if (result === 'fail' || result === 'permerror' || result === 'spam' || result === 'infected') return 'bad';
  if (result === 'softfail' || result === 'temperror') return 'warn';
  return 'muted';
}

// A verdict as the page shows it: the result and a line of details (the verdict objects carry more
// fields than the API description names; only strings are shown).
interface Verdict {
  result: string;
  details: string;
}
const text = (v: unknown) => (typeof v === 'string' ? v : '');
const shown = (v: { result: string; [field: string]: unknown }): Verdict => ({ result: v.result, details: text(v.details) });

function Verdicts(props: { verdicts: Detail['verdicts'] }) {
  const v = props.verdicts;
  if (!v) return <p class="muted">Not verified (the message could not be analysed).</p>;
  const items: [string, Verdict][] = [
    ['SPF', shown(v.spf)],
    ['DKIM', shown(v.dkim)],
    ['DMARC', shown(v.dmarc)],
    ['ARC', shown(v.arc)],
    [
      'Spam',
      {
        result: v.spam?.result ?? 'none',
        details: typeof v.spam?.score === 'number' ? `score ${v.spam.score} (${text(v.spam.action)})` : text(v.spam?.details),
      },
    ],
    ['Virus', { result: v.virus?.result ?? 'none', details: text(v.virus?.signature) || text(v.virus?.details) }],
  ];
  return (
    <ul class="verdicts" aria-label="Authentication verdicts">
      {items.map(([name, verdict]) => (
        <li data-verdict={name}>
          <Badge tone={verdictTone(verdict?.result ?? 'none')}>
            {name} {verdict?.result ?? 'none'}
          </Badge>{' '}
          <span class="muted">{verdict?.details || ''}</span>
        </li>
      ))}
    </ul>
  );
}

type DetailTab = 'html' | 'text' | 'reply' | 'headers';

function ReceivedDetail(props: { id: string }) {
  const sel = useSelectionKey();
  const msg = useAsync(() => get(msgPath(props.id)), [props.id, sel]);
  const [tab, setTab] = useState<DetailTab>('html');
  const m = msg.data;
  if (!m) {
    return (
      <Page title="Received message">
        <Sections current="received" />
        <ErrorLine error={msg.error} />
        {!msg.error && <Loading what="the message" />}
      </Page>
    );
  }
  const list = (v: Mailbox[]) => (v ?? []).map(mailbox).join(', ');
  return (
    <Page
      title={m.subject || '(no subject)'}
      actions={
        <a class="button secondary" href={msgPath(m.id, '/raw')} download={`${m.id}.eml`}>
          Download raw (.eml)
        </a>
      }
    >
      <Sections current="received" />
      <Facts
        items={[
          ['From', mailbox(m.from) || null],
          ['To', list(m.to) || null],
          ['Cc', list(m.cc) || null],
          ['Address', m.address + (m.plusTag ? ` (+${m.plusTag})` : '')],
          ['Envelope', `${m.envelope.from || '<>'} → ${m.envelope.to.join(', ')}`],
          ['Received', <Time iso={m.receivedAt} />],
          ['Status', <StatusBadge status={m.status} />],
          ['Size', formatBytes(m.sizeBytes)],
          ['Message-ID', m.messageId ? <span class="mono">{m.messageId}</span> : null],
        ]}
      />
      {m.truncated && <Notice tone="warn">The text or HTML was cut at the size limit; the raw source is whole.</Notice>}
      <h2>Authentication</h2>
      <Verdicts verdicts={m.verdicts} />
      <h2>Attachments</h2>
      {m.attachments.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <ul class="attachments">
          {m.attachments.map((a) => (
            <li>
              <a href={msgPath(m.id, `/attachments/${a.index}`)} download={a.filename}>
                {a.filename}
              </a>{' '}
              <span class="muted">
                {a.contentType}, {formatBytes(a.size)}
              </span>
            </li>
          ))}
        </ul>
      )}
      <h2>Content</h2>
      <Tabs<DetailTab>
        label="Message content"
        current={tab}
        onChange={(k) => setTab(k)}
        tabs={[
          { key: 'html', label: 'HTML' },
          { key: 'text', label: 'Text' },
          { key: 'reply', label: 'Stripped reply' },
          { key: 'headers', label: 'Headers' },
        ]}
      />
      <div role="tabpanel" aria-labelledby={`tab-${tab}`}>
        {tab === 'html' &&
          (m.html ? (
            <IsolatedFrame key={m.id} title="Message HTML" src={`/dashboard/view/inbound/${encodeURIComponent(m.id)}`} />
          ) : (
            <p class="muted">This message has no HTML part.</p>
          ))}
        {tab === 'text' && <pre class="message-text">{m.text || '(no text)'}</pre>}
        {tab === 'reply' && <pre class="message-text">{m.strippedReply || '(empty)'}</pre>}
        {tab === 'headers' && (
          <Table
            caption="Headers"
            rows={Object.entries((m.headers ?? {}) as Record<string, unknown>).flatMap(([k, v]) =>
              (Array.isArray(v) ? v : [v]).map((x, i) => ({ k, v: x, i })),
            )}
            rowKey={(r) => `${r.k}:${r.i}`}
            columns={[
              { label: 'Name', cell: (r) => <span class="mono">{r.k}</span> },
              { label: 'Value', cell: (r) => <span class="mono">{typeof r.v === 'string' ? r.v : JSON.stringify(r.v)}</span> },
            ]}
          />
        )}
      </div>
    </Page>
  );
}

function DomainList() {
  const sel = useSelectionKey();
  const list = useAsync(() => get('/v1/inbound/domains'), [sel]);
  const [domain, setDomain] = useState('');
  const [existing, setExisting] = useState<string[] | null>(null);
  const claim = useAction(async (acknowledgeExistingMx: boolean) => {
    try {
      const d = await post('/v1/inbound/domains', {
        domain: domain.trim(),
        acknowledgeExistingMx: acknowledgeExistingMx || undefined,
      });
      navigate(`/inbound/domains/${d.id}`);
    } catch (e) {
      if (e instanceof ApiError && e.code === 'existing_mx') {
        setExisting((e.extra.hosts as string[] | undefined) ?? []);
        return;
      }
      throw e;
    }
  });
  return (
    <Page title="Inbound">
      <Sections current="domains" />
      <h2>Domains</h2>
      <form
        class="card row"
        aria-label="Claim a domain"
        onSubmit={(e) => {
          e.preventDefault();
          setExisting(null);
          void claim.run(false);
        }}
      >
        <Field label="Custom domain" hint="Receive mail for a domain of your own: you publish an MX and a DKIM record.">
          {(id) => (
            <input id={id} required placeholder="inbox.example.com" value={domain} onInput={(e) => setDomain(e.currentTarget.value)} />
          )}
        </Field>
        <button type="submit" disabled={claim.busy}>
          Claim domain
        </button>
      </form>
      {existing && (
        <div class="notice warn" role="alert">
          <p>
            {domain} already receives mail at {existing.length ? existing.join(', ') : 'another server'}. Publishing Postern's MX replaces
            that: mail stops going there.
          </p>
          <button type="button" class="danger" disabled={claim.busy} onClick={() => void claim.run(true)}>
            Acknowledge existing MX and claim
          </button>
        </div>
      )}
      <ErrorLine error={claim.error} />
      <ErrorLine error={list.error} />
      {list.data ? (
        <Table
          caption="Inbound domains"
          rows={list.data.domains}
          rowKey={(d) => d.id}
          empty="No domains yet: the shared one appears with the first address."
          columns={[
            { label: 'Domain', cell: (d) => <Link href={`/inbound/domains/${d.id}`}>{d.domain}</Link> },
            { label: 'Kind', cell: (d) => d.kind },
            { label: 'Status', cell: (d) => <StatusBadge status={d.status} /> },
            { label: 'Receiving', cell: (d) => <StatusBadge status={d.receiving.verified ? 'verified' : 'pending'} /> },
            { label: 'Sending (DKIM)', cell: (d) => <StatusBadge status={d.sending.verified ? 'verified' : 'pending'} /> },
            { label: 'Created', cell: (d) => <Time iso={d.createdAt} /> },
          ]}
        />
      ) : (
        !list.error && <Loading what="domains" />
      )}
    </Page>
  );
}

function DomainDetail(props: { id: string }) {
  const sel = useSelectionKey();
  // GET re-checks a custom domain's records through DNS before it answers (pending ones to confirm
  // them, confirmed ones to see they are still published).
  const d = useAsync(() => get(`/v1/inbound/domains/${encodeURIComponent(props.id)}`), [props.id, sel]);
  const dom = d.data;
  return (
    <Page
      title={dom ? dom.domain : 'Domain'}
      actions={
        dom && (
          <>
            <button type="button" class="secondary" disabled={d.loading} onClick={d.reload}>
              {d.loading ? 'Checking…' : 'Re-check now'}
            </button>
            {dom.kind === 'custom' && (
              <ConfirmButton
                label="Remove domain"
                danger
                question={`Remove ${dom.domain}? Its addresses stop receiving.`}
                onConfirm={async () => {
                  await del(`/v1/inbound/domains/${encodeURIComponent(dom.id)}`);
                  navigate('/inbound/domains');
                }}
              />
            )}
          </>
        )
      }
    >
      <Sections current="domains" />
      <ErrorLine error={d.error} />
      {!dom ? (
        !d.error && <Loading what="the domain" />
      ) : (
        <>
          <Facts
            items={[
              ['Kind', dom.kind],
              ['Status', <StatusBadge status={dom.status} />],
              ['Receiving (MX)', dom.receiving.verified ? <Time iso={dom.receiving.verifiedAt} /> : <StatusBadge status="pending" />],
              ['Sending (DKIM)', dom.sending.verified ? <Time iso={dom.sending.verifiedAt} /> : <StatusBadge status="pending" />],
              ['Claimed', <Time iso={dom.createdAt} />],
            ]}
          />
          <h2>Records to publish</h2>
          {dom.kind === 'shared' ? (
            <p class="muted">The shared domain needs no records: Postern serves it.</p>
          ) : (
            <Table
              caption="DNS records to publish"
              rows={dom.records}
              rowKey={(r) => `${r.check}:${r.name}`}
              columns={[
                { label: 'Type', cell: (r) => r.type },
                {
                  label: 'Name',
                  cell: (r) => (
                    <span class="record">
                      <code>{r.name}</code> <CopyButton text={r.name} label={`Copy ${r.type} record name`} />
                    </span>
                  ),
                },
                {
                  label: 'Value',
                  cell: (r) => (
                    <span class="record">
                      <code class="record-value">{r.value}</code> <CopyButton text={r.value} label={`Copy ${r.type} record value`} />
                    </span>
                  ),
                },
                { label: 'Priority', cell: (r) => (r.priority === undefined ? '—' : String(r.priority)) },
                { label: 'Purpose', cell: (r) => r.purpose },
                {
                  label: 'Check',
                  cell: (r) =>
                    r.stillPublished === false ? (
                      <Badge tone="bad" title="Confirmed once, but the last re-check did not find it: publish it again">
                        no longer published
                      </Badge>
                    ) : (
                      <StatusBadge status={r.verified ? 'verified' : 'pending'} />
                    ),
                },
              ]}
            />
          )}
          {dom.returnPath && (
            <>
              <h2>Return path (optional)</h2>
              <p class="muted">
                Publish these two records and mail from {dom.domain} goes out with <code>{dom.returnPath.host}</code> as its envelope
                sender: SPF then aligns with {dom.domain} for DMARC, and bounces still come back here.{' '}
                {dom.returnPath.stillPublished === false ? (
                  <Badge tone="bad" title="Confirmed once, but the last re-check did not find it: mail uses the shared bounce domain">
                    no longer published
                  </Badge>
                ) : (
                  <StatusBadge status={dom.returnPath.verified ? 'verified' : 'pending'} />
                )}
              </p>
              <Table
                caption="Return path records"
                rows={dom.returnPath.records}
                rowKey={(r) => `${r.type}:${r.name}`}
                columns={[
                  { label: 'Type', cell: (r) => r.type },
                  {
                    label: 'Name',
                    cell: (r) => (
                      <span class="record">
                        <code>{r.name}</code> <CopyButton text={r.name} label={`Copy return path ${r.type} record name`} />
                      </span>
                    ),
                  },
                  {
                    label: 'Value',
                    cell: (r) => (
                      <span class="record">
                        <code class="record-value">{r.value}</code>{' '}
                        <CopyButton text={r.value} label={`Copy return path ${r.type} record value`} />
                      </span>
                    ),
                  },
                  { label: 'Priority', cell: (r) => (r.priority === undefined ? '—' : String(r.priority)) },
                  { label: 'Purpose', cell: (r) => r.purpose },
                ]}
              />
            </>
          )}
          {dom.dkim && dom.sending.verified && (
            <DkimKeys id={dom.id} domain={dom.domain} signing={dom.sending.verified} dkim={dom.dkim} onChange={d.reload} />
          )}
          {dom.kind === 'custom' && (
            <>
              <DomainChecks id={dom.id} />
              <DomainReports domain={dom.domain} />
            </>
          )}
        </>
      )}
    </Page>
  );
}

function AddressList() {
  const sel = useSelectionKey();
  const { me } = useSession();
  const livemode = me.selection?.env !== 'test';
  const domains = useAsync(() => get('/v1/inbound/domains'), [sel]);
  const endpoints = useAsync(() => get('/v1/webhooks'), [sel]);
  const [domainId, setDomainId] = useState('');
  const [tick, setTick] = useState(0);
  const list = useAsync(() => get(`/v1/inbound/addresses${query({ domainId })}`), [sel, domainId, tick]);
  const reload = () => setTick((t) => t + 1);
  const [form, setForm] = useState({ localPart: '', description: '', forwardTo: '', webhookEndpointId: '', domainId: '' });
  const [created, setCreated] = useState<Address | null>(null);
  const create = useAction(async () => {
    const a = await post('/v1/inbound/addresses', {
      localPart: form.localPart.trim() || undefined,
      description: form.description || undefined,
      forwardTo: form.forwardTo.trim() || undefined,
      webhookEndpointId: form.webhookEndpointId || undefined,
      domainId: form.domainId || undefined,
      livemode,
    });
    setCreated(a);
    setForm({ ...form, localPart: '', description: '', forwardTo: '' });
    reload();
  });
  const all = domains.data?.domains ?? [];
  const custom = all.filter((d) => d.kind === 'custom');
  const verifiedCustom = custom.filter((d) => d.receiving.verified);
  const endpointName = (id: string | null) => (id ? (endpoints.data?.data.find((e) => e.id === id)?.url ?? id) : null);
  const set = (k: keyof typeof form) => (e: { currentTarget: { value: string } }) => setForm({ ...form, [k]: e.currentTarget.value });
  return (
    <Page title="Inbound">
      <Sections current="addresses" />
      <h2>Addresses</h2>
      <form
        class="card"
        aria-label="New address"
        onSubmit={(e) => {
          e.preventDefault();
          void create.run();
        }}
      >
        <div class="row">
          <Field label="Local part" hint="* is the catch-all; empty picks a random one.">
            {(id) => <input id={id} class="mono" value={form.localPart} onInput={set('localPart')} />}
          </Field>
          <Field label="Domain">
            {(id) => (
              <select id={id} value={form.domainId} onChange={set('domainId')}>
                <option value="">Shared domain</option>
                {verifiedCustom.map((d) => (
                  <option value={d.id}>{d.domain}</option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Description">{(id) => <input id={id} value={form.description} onInput={set('description')} />}</Field>
        </div>
        <div class="row">
          <Field label="Forward to" hint="Optional: an email address outside Postern.">
            {(id) => <input id={id} type="email" value={form.forwardTo} onInput={set('forwardTo')} />}
          </Field>
          <Field label="Webhook endpoint" hint={`Endpoints of the ${livemode ? 'live' : 'test'} environment.`}>
            {(id) => (
              <select id={id} value={form.webhookEndpointId} onChange={set('webhookEndpointId')}>
                <option value="">None</option>
                {(endpoints.data?.data ?? []).map((e) => (
                  <option value={e.id}>{e.url}</option>
                ))}
              </select>
            )}
          </Field>
          <button type="submit" disabled={create.busy}>
            Create address
          </button>
        </div>
      </form>
      <ErrorLine error={create.error} />
      {created && (
        <Notice>
          Created <code>{created.address}</code>.
        </Notice>
      )}
      <div class="row">
        <Field label="Show addresses of">
          {(id) => (
            <select id={id} value={domainId} onChange={(e) => setDomainId(e.currentTarget.value)}>
              <option value="">Shared domain</option>
              {custom.map((d) => (
                <option value={d.id}>{d.domain}</option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <ErrorLine error={list.error} />
      {list.data ? (
        <Table
          caption="Inbound addresses"
          rows={list.data.addresses}
          rowKey={(a) => a.id}
          empty="No addresses on this domain yet."
          columns={[
            {
              label: 'Address',
              cell: (a) => (
                <span class="record">
                  <Link href={`/inbound?address=${encodeURIComponent(a.id)}`} class="mono">
                    {a.address}
                  </Link>{' '}
                  <CopyButton text={a.address} label={`Copy ${a.address}`} />
                </span>
              ),
            },
            { label: 'Description', cell: (a) => a.description || <span class="muted">—</span> },
            { label: 'Forwards to', cell: (a) => a.forwardTo ?? <span class="muted">—</span> },
            { label: 'Webhook', cell: (a) => endpointName(a.webhookEndpointId) ?? <span class="muted">—</span> },
            { label: 'Env', cell: (a) => (a.livemode ? 'live' : 'test') },
            { label: 'State', cell: (a) => <StatusBadge status={a.active ? 'active' : 'disabled'} /> },
            {
              label: 'Actions',
              cell: (a) =>
                a.active ? (
                  <ConfirmButton
                    small
                    danger
                    label="Deactivate"
                    confirmLabel="Deactivate"
                    question={`Deactivate ${a.address}? Mail to it is refused from now on.`}
                    onConfirm={async () => {
                      await post(`/v1/inbound/addresses/${encodeURIComponent(a.id)}/deactivate`);
                      reload();
                    }}
                  />
                ) : (
                  <span class="muted">inactive</span>
                ),
            },
          ]}
        />
      ) : (
        !list.error && <Loading what="addresses" />
      )}
    </Page>
  );
}

export const routes: Route[] = [
  { pattern: '/inbound', render: () => <ReceivedList /> },
  { pattern: '/inbound/messages/:id', render: (p) => <ReceivedDetail key={p.id} id={p.id} /> },
  { pattern: '/inbound/domains', render: () => <DomainList /> },
  { pattern: '/inbound/domains/:id', render: (p) => <DomainDetail key={p.id} id={p.id} /> },
  { pattern: '/inbound/addresses', render: () => <AddressList /> },
];
