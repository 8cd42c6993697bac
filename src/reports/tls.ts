// SMTP TLS reports (RFC 8460 section 4): JSON, one per reporting organisation and day, with one
// entry per policy domain the reporter tried to deliver to. Parsed with a zod schema that keeps
// only what the summary needs and tolerates the extra fields reporters add.
import { z } from 'zod';
import { ReportRefused } from './unpack.js';

const count = z.number().int().min(0).catch(0);

const schema = z.object({
  'organization-name': z.string().min(1),
  'date-range': z.object({ 'start-datetime': z.string(), 'end-datetime': z.string() }),
  'contact-info': z.string().optional(),
  'report-id': z.string().min(1),
  policies: z
    .array(
      z.object({
        policy: z.object({
          'policy-type': z.string(),
          'policy-domain': z.string().min(1),
          'mx-host': z.union([z.array(z.string()), z.string()]).optional(),
        }),
        summary: z.object({ 'total-successful-session-count': count, 'total-failure-session-count': count }),
        'failure-details': z
          .array(
            z.object({
              'result-type': z.string(),
              'sending-mta-ip': z.string().optional(),
              'receiving-mx-hostname': z.string().optional(),
              'failed-session-count': count,
            }),
          )
          .optional(),
      }),
    )
    .max(10_000),
});

export interface TlsPolicyResult {
  /** sts, tlsa or no-policy-found. */
  type: string;
  domain: string;
  mxHosts: string[];
  successful: number;
  failed: number;
  failures: { resultType: string; sendingMtaIp: string | null; receivingMx: string | null; count: number }[];
}

export interface TlsReport {
  org: string;
  email: string | null;
  reportId: string;
  begin: Date;
  end: Date;
  policies: TlsPolicyResult[];
}

function date(s: string, what: string): Date {
  const d = new Date(s);
  if (Number.isNaN(d.getTime())) throw new ReportRefused('corrupt', `${what} is not a date: ${s.slice(0, 40)}`);
  return d;
}

export function parseTlsReport(json: string): TlsReport {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    throw new ReportRefused('corrupt', `not JSON (${(err as Error).message})`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ReportRefused('not-a-report', `not a TLS report: ${issue.path.join('.') || 'document'}: ${issue.message}`);
  }
  const r = parsed.data;
  return {
    org: r['organization-name'],
    email: r['contact-info'] ?? null,
    reportId: r['report-id'],
    begin: date(r['date-range']['start-datetime'], 'start-datetime'),
    end: date(r['date-range']['end-datetime'], 'end-datetime'),
    policies: r.policies.map((p) => ({
      type: p.policy['policy-type'].toLowerCase(),
      domain: p.policy['policy-domain'].toLowerCase().replace(/\.$/, ''),
      mxHosts: [p.policy['mx-host'] ?? []].flat().map((h) => h.toLowerCase()),
      successful: p.summary['total-successful-session-count'],
      failed: p.summary['total-failure-session-count'],
      failures: (p['failure-details'] ?? []).map((f) => ({
        resultType: f['result-type'].toLowerCase(),
        sendingMtaIp: f['sending-mta-ip'] ?? null,
        receivingMx: f['receiving-mx-hostname']?.toLowerCase() ?? null,
        count: f['failed-session-count'],
      })),
    })),
  };
}
