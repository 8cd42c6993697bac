// A message's checks as a checklist (GET /v1/messages/{id}/checks, POST to run them again): HTML
// compatibility after caniemail, links, rspamd's spam score, and the headers receivers ask for.
// A test-key message is checked on its own after accept, so its checks load with the page; a live
// message's are asked for with the button (checking asks for every link of the message).
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { get, post } from '../api';
import { Badge, ErrorLine, Loading, useAction, useAsync } from '../components';
import type { ResponseOf } from '../../../src/contract/responses';

type Checks = ResponseOf<'GET /v1/messages/:id/checks'>;
type Status = Checks['status'];

const TONE = { pass: 'ok', warn: 'warn', fail: 'bad', skipped: 'muted' } as const;
const StatusMark = (props: { status: Status }) => <Badge tone={TONE[props.status]}>{props.status}</Badge>;

function Item(props: { name: string; status: Status; summary: string; children?: ComponentChildren }) {
  return (
    <li class={`check-item ${props.status}`} data-check={props.name}>
      <StatusMark status={props.status} /> <strong>{props.name}</strong> — {props.summary}
      {props.children && (
        <details>
          <summary>Details</summary>
          {props.children}
        </details>
      )}
    </li>
  );
}

export function MessageChecks(props: { id: string; livemode: boolean }) {
  const [asked, setAsked] = useState(!props.livemode);
  const [fresh, setFresh] = useState<Checks | null>(null);
  const stored = useAsync(() => (asked ? get(`/v1/messages/${props.id}/checks`) : Promise.resolve(null)), [props.id, asked]);
  const rerun = useAction(async () => setFresh(await post(`/v1/messages/${props.id}/checks`)));
  const c = fresh ?? stored.data ?? null;
  return (
    <section aria-labelledby="checks-title">
      <h2 id="checks-title">Checks</h2>
      <ErrorLine error={stored.error ?? rerun.error} />
      {!asked && (
        <p>
          <button type="button" onClick={() => setAsked(true)}>
            Check this message
          </button>{' '}
          <span class="muted small-print">HTML compatibility, links, spam score and headers.</span>
        </p>
      )}
      {asked && !c && stored.loading && <Loading what="the checks" />}
      {c && (
        <>
          <p class="muted small-print">
            {c.trigger === 'automatic' ? 'Checked after accept' : 'Checked on demand'} at {new Date(c.checkedAt).toLocaleString()}.{' '}
            <button type="button" class="secondary" disabled={rerun.busy} onClick={() => void rerun.run()}>
              {rerun.busy ? 'Checking…' : 'Check again'}
            </button>
          </p>
          <ul class="checklist" aria-label="Checklist">
            <Item name="HTML compatibility" status={c.html.status} summary={c.html.summary}>
              {c.html.findings.length > 0 && (
                <ul>
                  {c.html.findings.map((f) => (
                    <li key={f.feature}>
                      <a href={f.url} target="_blank" rel="noreferrer noopener">
                        {f.title}
                      </a>{' '}
                      (<span class="mono">{f.found.join(', ')}</span>):{' '}
                      {(['unsupported', 'partial'] as const)
                        .map((s) => [s, f.clients.filter((x) => x.support === s).map((x) => x.client)] as const)
                        .filter(([, clients]) => clients.length > 0)
                        .map(([s, clients]) => `${s === 'unsupported' ? 'not supported' : 'partly supported'} by ${clients.join(', ')}`)
                        .join('; ')}
                    </li>
                  ))}
                </ul>
              )}
            </Item>
            <Item name="Links" status={c.links.status} summary={c.links.summary}>
              {c.links.links.length > 0 && (
                <ul>
                  {c.links.links.map((l) => (
                    <li key={l.url}>
                      <Badge tone={l.verdict === 'ok' ? 'ok' : l.verdict === 'excluded' || l.verdict === 'skipped' ? 'muted' : 'bad'}>
                        {l.verdict}
                      </Badge>{' '}
                      <span class="mono">{l.url}</span>
                      {l.httpStatus !== undefined && ` — ${l.method ?? ''} ${l.httpStatus}`}
                      {l.finalUrl && <span class="mono"> → {l.finalUrl}</span>}
                      {l.detail && <span class="muted"> ({l.detail})</span>}
                    </li>
                  ))}
                </ul>
              )}
            </Item>
            <Item name="Spam score" status={c.spam.status} summary={c.spam.summary}>
              {c.spam.symbols && Object.keys(c.spam.symbols).length > 0 && (
                <ul>
                  {Object.entries(c.spam.symbols)
                    .sort((a, b) => b[1] - a[1])
                    .map(([name, score]) => (
                      <li key={name}>
                        <span class="mono">{name}</span> {score}
                      </li>
                    ))}
                </ul>
              )}
            </Item>
            <Item name="Headers" status={c.headers.status} summary={c.headers.summary}>
              <ul>
                {c.headers.items.map((h) => (
                  <li key={h.header}>
                    <StatusMark status={h.status} /> <span class="mono">{h.header}</span> — {h.detail}
                  </li>
                ))}
              </ul>
            </Item>
          </ul>
        </>
      )}
    </section>
  );
}
