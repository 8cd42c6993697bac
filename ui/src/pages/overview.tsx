// Overview: the chosen workspace and environment at a glance, from GET /dashboard/api/overview
// (its shape is documented in src/http/dashboard/overview.ts). The chart and meters are inline SVG
// (presentation attributes only: the CSP allows no inline style).
import { get } from '../api';
import { Badge, ErrorLine, Facts, Loading, Notice, Page, ScrollBox, Table, Time, useAsync } from '../components';
import { Link } from '../router';
import type { DayFigures, Meter, WindowFigures } from '../../../src/contract/overview';
import type { Route } from '../routes';
import { useSelectionKey } from '../session';

type Window = WindowFigures;
type Day = DayFigures;

const FIGURES: [keyof Window, string][] = [
  ['sent', 'Sent'],
  ['delivered', 'Delivered'],
  ['deferred', 'Deferred'],
  ['failed', 'Failed'],
  ['bounced', 'Bounced'],
  ['complained', 'Complained'],
  ['optedOut', 'Opted out'],
  ['suppressed', 'Suppressed'],
];

function age(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
  return `${Math.floor(seconds / 86400)} d`;
}

const pct = (r: number | null) => (r === null ? '—' : `${(r * 100).toFixed(1)}%`);

/** Stacked daily bars (delivered, sent, failed, other), with a text table for screen readers. */
function Chart(props: { days: Day[] }) {
  const max = Math.max(1, ...props.days.map((d) => d.delivered + d.sent + d.failed + d.other));
  const W = 40;
  const H = 100;
  const parts: [keyof Day, string][] = [
    ['delivered', '#1a7f37'],
    ['sent', '#0969da'],
    ['failed', '#cf222e'],
    ['other', '#8c959f'],
  ];
  return (
    <figure class="overview-chart">
      <svg class="chart" viewBox={`0 0 ${props.days.length * W} ${H + 16}`} role="img" aria-labelledby="chart-title">
        <title id="chart-title">Messages per day over the last 7 days, by outcome</title>
        {props.days.map((d, i) => {
          let y = H;
          return (
            <g key={d.day}>
              {parts.map(([k, color]) => {
                const h = ((d[k] as number) / max) * H;
                y -= h;
                return h > 0 ? <rect x={i * W + 6} y={y} width={W - 12} height={h} fill={color} /> : null;
              })}
              <text x={i * W + W / 2} y={H + 12} font-size="9" text-anchor="middle" fill="#57606a">
                {d.day.slice(5)}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption class="muted small-print">
        {parts.map(([k, color]) => (
          <span class="legend" key={k}>
            <svg width="10" height="10" aria-hidden="true">
              <rect width="10" height="10" fill={color} />
            </svg>{' '}
            {k}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

function MeterBar(props: { label: string; meter: Meter }) {
  const { used, limit } = props.meter;
  const share = limit ? Math.min(1, used / limit) : 0;
  return (
    <div class="overview-meter">
      <div class="row-between">
        <span>{props.label}</span>
        <span class="mono">
          {used} / {limit ?? '∞'}
        </span>
      </div>
      <svg
        class="meter-svg"
        viewBox="0 0 100 6"
        preserveAspectRatio="none"
        role="img"
        aria-label={`${props.label}: ${used} of ${limit ?? 'unlimited'}`}
      >
        <rect width="100" height="6" rx="3" fill="#eaeef2" />
        <rect width={share * 100} height="6" rx="3" fill={share >= 0.9 ? '#cf222e' : '#0969da'} />
      </svg>
    </div>
  );
}

function OverviewPage() {
  const key = useSelectionKey();
  const { data, error, loading } = useAsync(() => get('/dashboard/api/overview'), [key]);
  if (!data) return <Page title="Overview">{loading ? <Loading what="the overview" /> : <ErrorLine error={error} />}</Page>;
  const o = data;
  return (
    <Page title="Overview">
      <ErrorLine error={error} />
      {o.warnings.length > 0 && (
        <section aria-labelledby="warnings">
          <h2 id="warnings">Warnings</h2>
          {o.warnings.map((w) => (
            <Notice tone="warn" key={w.message}>
              {w.message}
            </Notice>
          ))}
        </section>
      )}
      <section aria-labelledby="outbound">
        <h2 id="outbound">Outbound messages</h2>
        <ScrollBox label="Messages by outcome over the last 24 hours and 7 days">
          <table class="overview-figures">
            <caption class="sr-only">Messages by outcome over the last 24 hours and 7 days</caption>
            <thead>
              <tr>
                <th scope="col">Outcome</th>
                <th scope="col">Last 24 h</th>
                <th scope="col">Last 7 days</th>
              </tr>
            </thead>
            <tbody>
              {FIGURES.map(([k, label]) => (
                <tr key={k} data-figure={k}>
                  <th scope="row">{label}</th>
                  <td class="mono">{o.windows['24h'][k]}</td>
                  <td class="mono">{o.windows['7d'][k]}</td>
                </tr>
              ))}
              <tr data-figure="bounceRate">
                <th scope="row">Bounce rate</th>
                <td class="mono">{pct(o.windows['24h'].bounceRate)}</td>
                <td class="mono">{pct(o.windows['7d'].bounceRate)}</td>
              </tr>
            </tbody>
          </table>
        </ScrollBox>
        <Chart days={o.daily} />
      </section>
      <div class="split">
        <section class="card" aria-labelledby="queue">
          <h2 id="queue">Queue</h2>
          <Facts
            items={[
              ['Scheduled', o.queue.scheduled],
              ['Queued', o.queue.queued],
              ['Rendered', o.queue.rendered],
              ['Deferred', o.queue.deferred],
              ['In flight', o.queue.inFlight],
              [
                'Oldest ready',
                o.queue.oldestReadyAgeSeconds === null ? (
                  'none waiting'
                ) : (
                  <span title={o.queue.oldestReadyAt ?? ''}>{age(o.queue.oldestReadyAgeSeconds)}</span>
                ),
              ],
            ]}
          />
          <p>
            <Link href="/messages?status=queued">Queued messages</Link> ·{' '}
            <Link href="/messages?status=dispatched">Deferred and in flight</Link>
          </p>
        </section>
        <section class="card" aria-labelledby="inbound">
          <h2 id="inbound">Inbound</h2>
          <Facts
            items={[
              ['Received, last 24 h', o.inbound['24h']],
              ['Received, last 7 days', o.inbound['7d']],
            ]}
          />
        </section>
        <section class="card" aria-labelledby="quota">
          <h2 id="quota">Plan {o.workspace.plan}</h2>
          {o.quota.messages && <MeterBar label="Live messages this month" meter={o.quota.messages} />}
          {o.quota.inbound && <MeterBar label="Received this month" meter={o.quota.inbound} />}
          {o.quota.senderCaps.map((c) => (
            <MeterBar
              key={`${c.tier}-${c.period}`}
              label={`Sender cap, ${c.tier === 'domain' ? 'own domain' : 'shared sender'}, per ${c.period}`}
              meter={c}
            />
          ))}
          {o.quota.senderCaps.length === 0 && (
            <p class="muted small-print">Sender caps do not apply here (test mode, relay mode or caps off).</p>
          )}
        </section>
      </div>
      <section aria-labelledby="webhooks">
        <h2 id="webhooks">Failing webhook endpoints</h2>
        <Table
          caption="Failing webhook endpoints"
          rows={o.webhooks.failing}
          rowKey={(w) => w.id}
          empty="Every webhook endpoint is healthy."
          columns={[
            { label: 'Endpoint', cell: (w) => <span class="mono">{w.url}</span> },
            { label: 'State', cell: (w) => (w.disabled ? <Badge tone="bad">disabled</Badge> : <Badge tone="warn">failing</Badge>) },
            { label: 'Failing since', cell: (w) => <Time iso={w.failingSince} /> },
            { label: 'Reason', cell: (w) => w.disabledReason ?? '' },
          ]}
        />
      </section>
      <p class="muted small-print">
        Figures at <Time iso={o.generatedAt} /> for {o.workspace.slug} ({o.env}).
      </p>
    </Page>
  );
}

export const routes: Route[] = [{ pattern: '/', render: () => <OverviewPage /> }];
