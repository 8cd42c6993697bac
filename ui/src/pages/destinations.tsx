// The workspace's email destinations (docs/email-delivery.md, "Destinations"): per domain what its
// mail there came to — delivered, deferred, bounced, the last error and its category — and whether
// delivery there is held (by the workspace, or by the operator for everyone) or backed off, and the
// lowered rate and connections of one that throttles (docs/deliverability.md). The
// workspace's own levers: suspend and resume its mail to a domain, purge what still waits.
import { useState } from 'preact/hooks';
import { get, post, query } from '../api';
import { Badge, ConfirmButton, ErrorLine, Field, Loading, Page, Pager, Table, Time, useAction, useAsync } from '../components';
import type { ResponseOf } from '../../../src/contract/responses';
import type { Route } from '../routes';
import { useSelectionKey } from '../session';

type Destination = ResponseOf<'GET /v1/destinations/:domain'>;

// The adaptive back-off: how fast mail goes there now, against the rate it climbs back to.
function Pace(props: { d: Destination }) {
  const a = props.d.adaptiveBackoff;
  if (!a) return <span class="muted">full speed</span>;
  return (
    <span>
      <Badge tone="warn" title="The destination asked to slow down: Postern sends slower and climbs back as mail goes through">
        slowed down
      </Badge>{' '}
      {a.rate}/min of {a.targetRate}/min, {a.connections} {a.connections === 1 ? 'connection' : 'connections'} per host, since{' '}
      <Time iso={a.since} />
      <br />
      <span class="muted">
        Last answer ({a.throttles} in all): {a.lastAnswer} <Time iso={a.lastAnswerAt} />
      </span>
    </span>
  );
}

function Standing(props: { d: Destination }) {
  const { d } = props;
  if (d.suspended === 'operator')
    return (
      <Badge tone="bad" title="Held for every workspace by the operator (postern queue suspend)">
        suspended by the operator
      </Badge>
    );
  if (d.suspended === 'workspace') return <Badge tone="warn">suspended</Badge>;
  if (d.backoffUntil)
    return (
      <Badge tone="warn" title={d.backoffReason ?? ''}>
        backing off
      </Badge>
    );
  return <Badge tone="muted">open</Badge>;
}

function SuspendForm(props: { onDone(): void }) {
  const [domain, setDomain] = useState('');
  const [reason, setReason] = useState('');
  const action = useAction(async () => {
    await post(`/v1/destinations/${encodeURIComponent(domain.trim())}/suspend`, reason ? { reason } : {});
    setDomain('');
    setReason('');
    props.onDone();
  });
  return (
    <form
      class="card"
      aria-labelledby="suspend-destination"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run();
      }}
    >
      <h2 id="suspend-destination">Suspend a destination</h2>
      <p class="muted">Mail to it waits in the queue, without a connection, until you resume it.</p>
      <div class="row">
        <Field label="Domain">
          {(id) => <input id={id} required placeholder="gmail.com" value={domain} onInput={(e) => setDomain(e.currentTarget.value)} />}
        </Field>
        <Field label="Reason (optional)">
          {(id) => <input id={id} maxLength={200} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />}
        </Field>
      </div>
      <ErrorLine error={action.error} />
      <button type="submit" disabled={action.busy}>
        Suspend
      </button>
    </form>
  );
}

function DestinationsPage() {
  const selection = useSelectionKey();
  const [afters, setAfters] = useState<(string | undefined)[]>([undefined]);
  const after = afters[afters.length - 1];
  const list = useAsync(() => get(`/v1/destinations${query({ after })}`), [selection, after]);
  const act = useAction(async (path: string) => {
    await post(path, {});
    list.reload();
  });
  return (
    <Page title="Destinations">
      <p class="muted">
        What this workspace&apos;s email to each domain came to. A destination that rate-limits or blocks is backed off for a while, for
        every workspace; one that asks to slow down is sent to slower and over fewer connections, climbing back as mail goes through. You
        can hold your own mail to a domain, or drop what still waits for it.
      </p>
      <SuspendForm onDone={() => list.reload()} />
      <h2>Destination domains</h2>
      <ErrorLine error={list.error ?? act.error} />
      {!list.data ? (
        <Loading what="destinations" />
      ) : (
        <>
          <Table
            caption="Destination domains"
            rows={list.data.data}
            rowKey={(d) => d.domain}
            empty="No email was sent yet."
            columns={[
              { label: 'Domain', cell: (d) => <code>{d.domain}</code> },
              { label: 'Delivered', cell: (d) => String(d.delivered) },
              { label: 'Deferred', cell: (d) => String(d.deferred) },
              { label: 'Bounced', cell: (d) => String(d.bounced) },
              {
                label: 'Last error',
                cell: (d) =>
                  d.lastError ? (
                    <span>
                      {d.lastCategory && <Badge tone="warn">{d.lastCategory}</Badge>} {d.lastError}{' '}
                      {d.lastErrorAt && <Time iso={d.lastErrorAt} />}
                    </span>
                  ) : (
                    <span class="muted">—</span>
                  ),
              },
              { label: 'Standing', cell: (d) => <Standing d={d} /> },
              { label: 'Pace', cell: (d) => <Pace d={d} /> },
              {
                label: 'Actions',
                cell: (d) => (
                  <span class="row">
                    {d.suspended === 'workspace' ? (
                      <button
                        type="button"
                        class="secondary small"
                        aria-label={`Resume ${d.domain}`}
                        disabled={act.busy}
                        onClick={() => void act.run(`/v1/destinations/${encodeURIComponent(d.domain)}/resume`)}
                      >
                        Resume
                      </button>
                    ) : (
                      <button
                        type="button"
                        class="secondary small"
                        aria-label={`Suspend ${d.domain}`}
                        disabled={act.busy}
                        onClick={() => void act.run(`/v1/destinations/${encodeURIComponent(d.domain)}/suspend`)}
                      >
                        Suspend
                      </button>
                    )}
                    <ConfirmButton
                      small
                      danger
                      label={`Purge ${d.domain}`}
                      question={
                        <>
                          Drop the mail still waiting for <code>{d.domain}</code>? Queued messages are canceled, deferred ones fail.
                        </>
                      }
                      confirmLabel="Purge"
                      onConfirm={async () => {
                        await post(`/v1/destinations/${encodeURIComponent(d.domain)}/purge`, {});
                        list.reload();
                      }}
                    />
                  </span>
                ),
              },
            ]}
          />
          <Pager
            hasPrevious={afters.length > 1}
            hasNext={Boolean(list.data.next)}
            onPrevious={() => setAfters(afters.slice(0, -1))}
            onNext={() => setAfters([...afters, list.data!.next ?? undefined])}
          />
        </>
      )}
    </Page>
  );
}

export const routes: Route[] = [{ pattern: '/destinations', render: () => <DestinationsPage /> }];
