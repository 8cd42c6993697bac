// A custom domain's health, on its page: the doctor's checks (GET /v1/inbound/domains/{id}/checks,
// each pass / warn / fail with the record to publish) and what receivers reported about it over
// the last 30 days (GET /v1/reports/dmarc and /v1/reports/tls, per UTC day). Beside the TLS reports
// receivers mailed about sessions to the domain's MX hosts (outbound) come the STARTTLS sessions
// senders opened to this box's MX (inbound, per MX host: they name no domain).
import { get, query } from '../api';
import { Badge, ErrorLine, Loading, Table, useAsync, type Tone } from '../components';
import type { ResponseOf } from '../../../src/contract/responses';
import { useSelectionKey } from '../session';

type Check = ResponseOf<'GET /v1/inbound/domains/:id/checks'>['checks'][number];

const failureList = (failures: Record<string, number>) =>
  Object.entries(failures)
    .map(([type, n]) => `${type} ×${n}`)
    .join(', ') || '—';

const TONES: Record<Check['status'], Tone> = { pass: 'ok', warn: 'warn', fail: 'bad' };
const pct = (n: number, of: number) => (of === 0 ? '—' : `${Math.round((n / of) * 1000) / 10}%`);

export function DomainChecks(props: { id: string }) {
  const sel = useSelectionKey();
  const checks = useAsync(() => get(`/v1/inbound/domains/${encodeURIComponent(props.id)}/checks`), [props.id, sel]);
  return (
    <>
      <h2>Checks</h2>
      <p class="muted">What receivers will judge, asked of DNS now (the same as postern doctor).</p>
      <ErrorLine error={checks.error} />
      {!checks.data ? (
        !checks.error && <Loading what="the checks" />
      ) : (
        <Table
          caption="Domain checks"
          rows={[...checks.data.checks, ...checks.data.host]}
          rowKey={(c) => c.name}
          columns={[
            { label: 'Check', cell: (c) => c.name },
            { label: 'Result', cell: (c) => <Badge tone={TONES[c.status]}>{c.status}</Badge> },
            { label: 'Detail', cell: (c) => c.detail },
            {
              label: 'Publish',
              cell: (c) =>
                c.fix ? (
                  <code class="record-value">
                    {c.fix.name} {c.fix.type} {c.fix.value}
                  </code>
                ) : (
                  '—'
                ),
            },
          ]}
        />
      )}
    </>
  );
}

export function DomainReports(props: { domain: string }) {
  const sel = useSelectionKey();
  const dmarc = useAsync(() => get(`/v1/reports/dmarc${query({ domain: props.domain })}`), [props.domain, sel]);
  const tls = useAsync(() => get(`/v1/reports/tls${query({ domain: props.domain })}`), [props.domain, sel]);
  return (
    <>
      <h2>DMARC reports (last 30 days)</h2>
      <ErrorLine error={dmarc.error} />
      {!dmarc.data ? (
        !dmarc.error && <Loading what="the DMARC reports" />
      ) : (
        <Table
          caption="DMARC reports per day"
          rows={[...dmarc.data.data].reverse()}
          rowKey={(d) => d.day}
          empty="No DMARC report yet: receivers send them daily to the rua= address of the DMARC record."
          columns={[
            { label: 'Day', cell: (d) => d.day },
            { label: 'Messages', cell: (d) => String(d.messages), class: 'num' },
            { label: 'Passed DMARC', cell: (d) => `${d.passed} (${pct(d.passed, d.messages)})`, class: 'num' },
            { label: 'Own mail passed', cell: (d) => `${d.own.passed} of ${d.own.messages}`, class: 'num' },
            { label: 'Foreign mail', cell: (d) => `${d.foreign.messages} (${d.foreign.passed} passed)`, class: 'num' },
            { label: 'Quarantined / rejected', cell: (d) => `${d.dispositions.quarantine} / ${d.dispositions.reject}`, class: 'num' },
            {
              label: 'Failing sources',
              cell: (d) =>
                [
                  ...d.failingSources.own.map((s) => `${s.ip} ×${s.count} (own)`),
                  ...d.failingSources.foreign.map((s) => `${s.ip} ×${s.count}`),
                ].join(', ') || '—',
            },
          ]}
        />
      )}
      <h2>TLS reports (last 30 days)</h2>
      <ErrorLine error={tls.error} />
      {!tls.data ? (
        !tls.error && <Loading what="the TLS reports" />
      ) : (
        <Table
          caption="TLS reports per day"
          rows={[...tls.data.data].reverse()}
          rowKey={(d) => d.day}
          empty="No TLS report yet: publish the _smtp._tls record to receive them."
          columns={[
            { label: 'Day', cell: (d) => d.day },
            { label: 'Sessions', cell: (d) => String(d.successful + d.failed), class: 'num' },
            { label: 'Failed', cell: (d) => `${d.failed} (${pct(d.failed, d.successful + d.failed)})`, class: 'num' },
            { label: 'Failures', cell: (d) => failureList(d.failures) },
          ]}
        />
      )}
      {tls.data && (
        <>
          <h3>Inbound STARTTLS (to this box's MX)</h3>
          <p class="muted">
            Sessions senders opened to Postern's MX listener, counted here: TLS 1.2 or later, or why the handshake failed.
          </p>
          <Table
            caption="Inbound STARTTLS sessions per day"
            rows={[...tls.data.inbound].reverse()}
            rowKey={(d) => `${d.hostname} ${d.day}`}
            empty="No STARTTLS session yet."
            columns={[
              { label: 'Day', cell: (d) => d.day },
              { label: 'MX host', cell: (d) => d.hostname },
              { label: 'Sessions', cell: (d) => String(d.successful + d.failed), class: 'num' },
              { label: 'Failed', cell: (d) => `${d.failed} (${pct(d.failed, d.successful + d.failed)})`, class: 'num' },
              { label: 'Failures', cell: (d) => failureList(d.failures) },
            ]}
          />
        </>
      )}
    </>
  );
}
