// Messages: the list with every filter of GET /v1/messages (kept in the URL, so a reload keeps
// them), paged by the API's cursor (a stack of the cursors passed, for "Newer"), a live tail on
// the same filters (GET /v1/messages?tail=1, Server-Sent Events), and a message's detail: status,
// metadata, timeline, engagement, the rendered preview at desktop and mobile widths (a sandboxed
// iframe on /dashboard/view), text, headers and source, the checks of an email message
// (message-checks.tsx); cancel, and retry a deferred one now.
import { useEffect, useState } from 'preact/hooks';
import { STATUS_FILTERS } from '../../../src/contract/messages';
import type { ResponseOf } from '../../../src/contract/responses';
import { del, get, post, query } from '../api';
import {
  Badge,
  ConfirmButton,
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
  useAction,
  useAsync,
} from '../components';
import { Link, navigate, useRoute } from '../router';
import type { Route } from '../routes';
import { useSelectionKey } from '../session';
import { MessageChecks } from './message-checks';
import { CHANNEL_HINTS, CHANNELS } from '../../../src/contract/channels';

type Message = ResponseOf<'GET /v1/messages/:id'>;

interface Filters {
  status: string;
  channel: string;
  template: string;
  q: string;
  /** `key=value` pairs, comma-separated. */
  metadata: string;
  limit: string;
}

/**
 * The status to show: a dispatched message that a temporary failure deferred (its error says which)
 * waits for a retry. The same rule as GET /v1/messages?status=deferred, so the list and the
 * filter agree.
 */
function shownStatus(m: Message): string {
  return m.status === 'dispatched' && m.error !== null ? 'deferred' : m.status;
}

function filtersFrom(params: URLSearchParams): Filters {
  const meta: string[] = [];
  params.forEach((v, k) => {
    const m = /^metadata\[(.+)\]$/.exec(k);
    if (m) meta.push(`${m[1]}=${v}`);
  });
  return {
    status: params.get('status') ?? '',
    channel: params.get('channel') ?? '',
    template: params.get('template') ?? '',
    q: params.get('q') ?? '',
    metadata: meta.join(', '),
    limit: params.get('limit') ?? '',
  };
}

/** The query string of GET /v1/messages for these filters (and the page URL's). */
function filterQuery(f: Filters, extra: Record<string, string | undefined> = {}): '' | `?${string}` {
  const base = query({ status: f.status, channel: f.channel, template: f.template, q: f.q, limit: f.limit, ...extra });
  const params = new URLSearchParams(base.slice(1));
  for (const pair of f.metadata.split(',')) {
    const i = pair.indexOf('=');
    if (i > 0) params.append(`metadata[${pair.slice(0, i).trim()}]`, pair.slice(i + 1).trim());
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

function FilterForm(props: { initial: Filters }) {
  const [f, setF] = useState(props.initial);
  useEffect(() => setF(props.initial), [JSON.stringify(props.initial)]);
  const set = (k: keyof Filters) => (e: Event) => setF({ ...f, [k]: (e.currentTarget as HTMLInputElement).value });
  return (
    <form
      class="row filters"
      aria-label="Filters"
      onSubmit={(e) => {
        e.preventDefault();
        navigate(`/messages${filterQuery(f)}`);
      }}
    >
      <Field label="Status">
        {(id) => (
          <select id={id} value={f.status} onChange={set('status')}>
            <option value="">any</option>
            {STATUS_FILTERS.map((s) => (
              <option value={s}>{s.replace('_', ' ')}</option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Channel">
        {(id) => (
          <select id={id} value={f.channel} onChange={set('channel')}>
            <option value="">any</option>
            {CHANNELS.map((c) => (
              <option value={c}>{c}</option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Template">{(id) => <input id={id} value={f.template} onInput={set('template')} placeholder="slug" />}</Field>
      <Field label="Search">
        {(id) => <input id={id} type="search" value={f.q} onInput={set('q')} placeholder="id, recipient, metadata" />}
      </Field>
      <Field label="Metadata">
        {(id) => <input id={id} value={f.metadata} onInput={set('metadata')} placeholder="key=value, key2=value" />}
      </Field>
      <Field label="Per page">
        {(id) => (
          <select id={id} value={f.limit} onChange={set('limit')}>
            <option value="">50</option>
            <option value="10">10</option>
            <option value="100">100</option>
            <option value="200">200</option>
          </select>
        )}
      </Field>
      <button type="submit">Apply</button>
      <button
        type="button"
        class="secondary"
        onClick={() => {
          navigate('/messages');
        }}
      >
        Clear
      </button>
    </form>
  );
}

function MessageTable(props: { rows: Message[]; caption: string }) {
  return (
    <Table
      caption={props.caption}
      rows={props.rows}
      rowKey={(m) => m.publicId}
      empty="No message matches."
      columns={[
        {
          label: 'Message',
          cell: (m) => (
            <Link href={`/messages/${m.publicId}`} class="mono">
              {m.publicId}
            </Link>
          ),
        },
        {
          label: 'Recipient',
          cell: (m) => <span class="mono">{m.recipient.length > 60 ? `${m.recipient.slice(0, 60)}…` : m.recipient}</span>,
        },
        { label: 'Channel', cell: (m) => m.channel },
        { label: 'Template', cell: (m) => m.templateSlug ?? <span class="muted">—</span> },
        { label: 'Status', cell: (m) => <StatusBadge status={shownStatus(m)} /> },
        { label: 'Created', cell: (m) => <Time iso={m.createdAt} /> },
      ]}
    />
  );
}

/** The live tail: the stream's messages, newest on top, each once (a change replaces it). */
function Tail(props: { q: string }) {
  const [rows, setRows] = useState<Message[]>([]);
  const [state, setState] = useState<'connecting' | 'live' | 'closed'>('connecting');
  useEffect(() => {
    setRows([]);
    const source = new EventSource(`/v1/messages${props.q ? `${props.q}&` : '?'}tail=1`);
    source.onopen = () => setState('live');
    source.onerror = () => setState(source.readyState === EventSource.CLOSED ? 'closed' : 'connecting');
    source.addEventListener('message', (e) => {
      const m = JSON.parse((e as MessageEvent<string>).data) as Message;
      setRows((rs) => [m, ...rs.filter((r) => r.publicId !== m.publicId)].slice(0, 500));
    });
    return () => source.close();
  }, [props.q]);
  return (
    <section aria-labelledby="tail-title">
      <h2 id="tail-title">
        Live tail <Badge tone={state === 'live' ? 'ok' : 'warn'}>{state}</Badge>
      </h2>
      <div aria-live="polite">
        <MessageTable rows={rows} caption="Messages arriving live" />
      </div>
    </section>
  );
}

function MessageList() {
  const { params } = useRoute();
  const key = useSelectionKey();
  const filters = filtersFrom(params);
  const q = filterQuery(filters);
  const [tail, setTail] = useState(false);
  // The cursors of the pages passed through (for "Newer"); the current page's cursor is last.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  useEffect(() => setCursors([undefined]), [q, key]);
  const cursor = cursors[cursors.length - 1];
  const page = useAsync(() => get(`/v1/messages${filterQuery(filters, { cursor })}`), [q, cursor, key]);
  return (
    <Page
      title="Messages"
      actions={
        <label class="toggle">
          <input type="checkbox" checked={tail} onChange={(e) => setTail(e.currentTarget.checked)} /> Live tail
        </label>
      }
    >
      <FilterForm initial={filters} />
      {tail ? (
        <Tail q={q} />
      ) : (
        <>
          <ErrorLine error={page.error} />
          {page.data ? (
            <MessageTable rows={page.data.data} caption="Messages, newest first" />
          ) : (
            page.loading && <Loading what="messages" />
          )}
          <Pager
            hasPrevious={cursors.length > 1}
            hasNext={!!page.data?.nextCursor}
            onPrevious={() => setCursors((c) => c.slice(0, -1))}
            onNext={() => {
              const next = page.data?.nextCursor;
              if (next) setCursors((c) => [...c, next]);
            }}
          />
        </>
      )}
    </Page>
  );
}

type DetailTab = 'preview' | 'text' | 'headers' | 'source';

function Content(props: { m: Message }) {
  const id = props.m.publicId;
  const [tab, setTab] = useState<DetailTab>('preview');
  const [width, setWidth] = useState<'desktop' | 'mobile'>('desktop');
  const rendered = useAsync(() => get(`/dashboard/api/messages/${id}/rendered`), [id]);
  const raw = useAsync(
    () =>
      tab === 'source' && CHANNEL_HINTS[props.m.channel].mime
        ? fetch(`/dashboard/view/messages/${id}/source.eml`).then((r) => r.text())
        : Promise.resolve(''),
    [id, tab],
  );
  const email = CHANNEL_HINTS[props.m.channel].mime;
  const tabs: { key: DetailTab; label: string }[] = [
    { key: 'preview', label: 'Preview' },
    { key: 'text', label: email ? 'Text' : 'Content' },
    ...(email
      ? ([
          { key: 'headers', label: 'Headers' },
          { key: 'source', label: 'Source' },
        ] as const)
      : []),
  ];
  const out = rendered.data?.output ?? {};
  return (
    <section aria-labelledby="content-title">
      <h2 id="content-title">Content</h2>
      <ErrorLine error={rendered.error} />
      <Tabs<DetailTab> label="Content views" tabs={tabs} current={tab} onChange={(k) => setTab(k)} />
      <div role="tabpanel" aria-labelledby={`tab-${tab}`} class="tab-panel">
        {tab === 'preview' &&
          (email ? (
            <>
              <p>
                Subject: <strong>{out.subject ?? ''}</strong>
              </p>
              <div class="row">
                <button
                  type="button"
                  class={width === 'desktop' ? '' : 'secondary'}
                  aria-pressed={width === 'desktop'}
                  onClick={() => setWidth('desktop')}
                >
                  Desktop
                </button>
                <button
                  type="button"
                  class={width === 'mobile' ? '' : 'secondary'}
                  aria-pressed={width === 'mobile'}
                  onClick={() => setWidth('mobile')}
                >
                  Mobile
                </button>
              </div>
              <IsolatedFrame
                class={`preview-frame ${width}`}
                title={`Preview of ${id} (${width})`}
                src={`/dashboard/view/messages/${id}/html`}
              />
            </>
          ) : (
            <pre class="mono message-text">{JSON.stringify(out, null, 2)}</pre>
          ))}
        {tab === 'text' && <pre class="mono message-text">{email ? (out.text ?? '') : JSON.stringify(out, null, 2)}</pre>}
        {tab === 'headers' && (
          <Table
            caption="Headers"
            rows={rendered.data?.headers ?? []}
            rowKey={(h) => `${h[0]}:${h[1]}`}
            columns={[
              { label: 'Header', cell: (h) => <span class="mono">{h[0]}</span> },
              { label: 'Value', cell: (h) => <span class="mono">{h[1]}</span> },
            ]}
          />
        )}
        {tab === 'source' && (
          <>
            <p>
              <a href={`/dashboard/view/messages/${id}/source.eml`} download={`${id}.eml`}>
                Download .eml
              </a>{' '}
              <span class="muted small-print">Reconstructed from the stored content: unsigned and without click tracking.</span>
            </p>
            {raw.loading ? <Loading what="the source" /> : <pre class="mono message-text">{raw.data}</pre>}
          </>
        )}
      </div>
    </section>
  );
}

function MessageDetail(props: { id: string }) {
  const key = useSelectionKey();
  const { data: m, error, loading, reload } = useAsync(() => get(`/v1/messages/${props.id}`), [props.id, key]);
  const [done, setDone] = useState('');
  const retry = useAction(async () => {
    await post(`/v1/messages/${props.id}/retry`);
    setDone('Retry requested: the message is due now.');
    reload();
  });
  if (!m) return <Page title={`Message ${props.id}`}>{loading ? <Loading what="the message" /> : <ErrorLine error={error} />}</Page>;
  const cancelable = m.status === 'scheduled' || m.status === 'queued';
  const deferred = m.status === 'dispatched';
  return (
    <Page
      title={`Message ${m.publicId}`}
      actions={
        <>
          {cancelable && (
            <ConfirmButton
              label="Cancel message"
              danger
              question={`Cancel ${m.publicId}? It will not be sent.`}
              onConfirm={async () => {
                await del(`/v1/messages/${m.publicId}`);
                setDone('Canceled.');
                reload();
              }}
            />
          )}
          {deferred && (
            <button type="button" class="secondary" disabled={retry.busy} onClick={() => void retry.run()}>
              Retry now
            </button>
          )}
        </>
      }
    >
      <p>
        <Link href="/messages">← All messages</Link>
      </p>
      {done && <Notice>{done}</Notice>}
      <ErrorLine error={retry.error} />
      <Facts
        items={[
          ['Status', <StatusBadge status={shownStatus(m)} />],
          ['Recipient', <span class="mono">{m.recipient}</span>],
          ['Channel', m.channel],
          ['Template', m.templateSlug ? `${m.templateSlug}${m.pinnedVersion ? ` v${m.pinnedVersion}` : ''}` : null],
          ['Environment', m.livemode ? 'live' : 'test'],
          ['Created', <Time iso={m.createdAt} />],
          ['Scheduled for', m.scheduledAt ? <Time iso={m.scheduledAt} /> : null],
          ['Provider', m.provider],
          ['Provider message id', m.providerMessageId ? <span class="mono">{m.providerMessageId}</span> : null],
          ['Latency', m.latencyMs === null ? null : `${m.latencyMs} ms`],
          ['Error', m.error],
        ]}
      />
      <div class="split">
        <section aria-labelledby="timeline-title">
          <h2 id="timeline-title">Timeline</h2>
          <ol class="timeline">
            {m.timeline.map((e, i) => (
              <li key={i}>
                <Time iso={e.t} /> — <span class="mono">{e.e}</span>
              </li>
            ))}
          </ol>
        </section>
        <section aria-labelledby="engagement-title">
          <h2 id="engagement-title">Engagement</h2>
          <Facts
            items={[
              ['First opened', m.openedAt ? <Time iso={m.openedAt} /> : 'not opened'],
              ['First clicked', m.clickedAt ? <Time iso={m.clickedAt} /> : 'no click'],
            ]}
          />
          <h2 id="metadata-title">Metadata</h2>
          {Object.keys(m.metadata).length ? (
            <Facts
              items={Object.entries(m.metadata).map(([k, v]) => [k, <span class="mono">{String(v)}</span>] as [string, unknown] as never)}
            />
          ) : (
            <p class="muted">No metadata.</p>
          )}
        </section>
      </div>
      <Content m={m} />
      {CHANNEL_HINTS[m.channel].mime && <MessageChecks id={m.publicId} livemode={m.livemode} />}
    </Page>
  );
}

export const routes: Route[] = [
  { pattern: '/messages', render: () => <MessageList /> },
  { pattern: '/messages/:id', render: (p) => <MessageDetail id={p.id} /> },
];
