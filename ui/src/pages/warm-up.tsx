// Source addresses and warm-up (docs/deliverability.md): the box's source addresses with their
// EHLO names and pools, who uses which pool, and each (source, sending domain) warm-up schedule —
// today's allowance and what is used of it, the next step, and why the ramp is paused. Owners
// only: the sources are the box's. Everything here is set in the config (delivery.*).
import { Badge, ErrorLine, Facts, Loading, Notice, Page, Table, Time, useAsync } from '../components';
import { get } from '../api';
import type { ScheduleView } from '../../../src/contract/warm-up';
import type { Route } from '../routes';

type Schedule = ScheduleView;

function Standing(props: { s: Schedule }) {
  const { s } = props;
  if (s.pausedReason)
    return (
      <Badge tone="warn" title={s.pausedAt ? `since ${s.pausedAt}` : ''}>
        paused: {s.pausedReason}
      </Badge>
    );
  if (s.allowance === null) return <Badge tone="ok">warm</Badge>;
  return <Badge tone="muted">climbing</Badge>;
}

function nextStep(s: Schedule): string {
  if (s.allowance === null) return 'none: warm';
  if (!s.next) return 'none while paused';
  return `${s.next.allowance === null ? 'no limit' : s.next.allowance} from ${s.next.day}`;
}

function WarmUpPage() {
  const view = useAsync(() => get('/dashboard/api/warm-up'), []);
  const v = view.data;
  const assigned = v
    ? [
        ...(v.assignment.default ? [['Everyone else', v.assignment.default] as [string, string]] : []),
        ...Object.entries(v.assignment.domains).map(([d, p]): [string, string] => [`Sending domain ${d}`, p]),
        ...Object.entries(v.assignment.workspaces).map(([w, p]): [string, string] => [`Workspace ${w}`, p]),
      ]
    : [];
  return (
    <Page title="Sources & warm-up">
      <ErrorLine error={view.error} />
      {!v ? (
        <Loading what="the sources" />
      ) : (
        <>
          <Table
            caption={`Source addresses (${v.sources.length})`}
            rows={v.sources}
            rowKey={(s) => s.name}
            empty="No source addresses: mail leaves from the address the system picks (delivery.sources)."
            columns={[
              { label: 'Source', cell: (s) => s.name },
              { label: 'Address', cell: (s) => <span class="mono">{s.address}</span> },
              { label: 'EHLO name', cell: (s) => <span class="mono">{s.ehlo}</span> },
              { label: 'Pools', cell: (s) => s.pools.join(', ') || '—' },
              { label: 'Warm-up', cell: (s) => (s.warmingUp ? 'yes' : 'no') },
            ]}
          />
          {assigned.length > 0 ? (
            <section class="card" aria-labelledby="pool-assignment">
              <h2 id="pool-assignment">Who uses which pool</h2>
              <Facts items={assigned.map(([who, pool]) => [who, `pool ${pool}`])} />
            </section>
          ) : null}
          {!v.enabled ? (
            <Notice>Warm-up is off (delivery.warmUp.enabled).</Notice>
          ) : (
            <p class="muted">Daily allowances of the ramp: {v.curve.join(', ')}; then no limit.</p>
          )}
          <Table
            caption={`Warm-up schedules (${v.data.length})`}
            rows={v.data}
            rowKey={(s) => `${s.source} ${s.sendingDomain}`}
            empty="No schedule yet: one starts with the first message a warming-up source sends for a domain."
            columns={[
              { label: 'Source', cell: (s) => s.source },
              { label: 'Sending domain', cell: (s) => s.sendingDomain },
              { label: 'Step', cell: (s) => `${Math.min(s.step + 1, s.steps)} of ${s.steps}` },
              { label: "Today's allowance", cell: (s) => (s.allowance === null ? 'no limit' : s.allowance) },
              { label: 'Used', cell: (s) => s.used },
              { label: 'Next step', cell: (s) => nextStep(s) },
              {
                label: `Answers (last ${v.data[0]?.recent.windowHours ?? 0} h)`,
                cell: (s) =>
                  `${s.recent.delivered} delivered, ${s.recent.bounced} bounced, ${s.recent.deferred} deferred, ${s.recent.complained} complaints`,
              },
              { label: 'Standing', cell: (s) => <Standing s={s} /> },
              { label: 'Started', cell: (s) => <Time iso={s.startedAt} /> },
            ]}
          />
          <button type="button" class="secondary" onClick={() => view.reload()}>
            Refresh
          </button>
        </>
      )}
    </Page>
  );
}

export const routes: Route[] = [{ pattern: '/warm-up', render: () => <WarmUpPage />, ownerOnly: true }];
