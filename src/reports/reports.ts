// What a workspace reads of the reports: the days of its own domains (custom domains it holds,
// sending or receiving), DMARC with Postern's own sending addresses told apart from everyone else
// using the domain, TLS by result type. Beside the TLS days of the workspace's domains come the
// inbound ones (inbound-tls.ts): the STARTTLS sessions senders opened to this box's MX, per MX host
// and day. They name no domain (STARTTLS comes before RCPT TO) and the MX receives for every
// workspace, so every workspace sees them, whatever `domain` asks.
import type { Deps } from '../deps.js';
import { notFound } from '../lib/errors.js';
import { createInboundTls, type InboundTls, type InboundTlsDay } from './inbound-tls.js';
import { createReportInbox, type ReportInbox } from './inbox.js';
import { createReportReading } from './report-reading.js';
import { createReportStore, type DmarcDay, type ReportStore, type TlsDay } from './store.js';

export interface ReportQuery {
  /** One of the workspace's domains; all of them when absent. */
  domain?: string;
  /** UTC days, inclusive (YYYY-MM-DD). */
  from: string;
  to: string;
}

export interface Reports {
  store: ReportStore;
  inbox: ReportInbox;
  /** The MX listener's STARTTLS sessions, counted (the listener tells it) and summarised. */
  inboundTls: InboundTls;
  dmarc(workspaceId: string, q: ReportQuery): Promise<DmarcDay[]>;
  tls(workspaceId: string, q: ReportQuery): Promise<{ data: TlsDay[]; inbound: InboundTlsDay[] }>;
}

/** Records written to the database in one transaction. */
const RECORD_BATCH = 500;

export function createReports(
  deps: Pick<Deps, 'db' | 'clock' | 'ids' | 'log' | 'bus'> & {
    ownAddresses: () => readonly string[];
    maxRows: number;
    /** The name the MX listener greets as, which its STARTTLS sessions are counted under. */
    hostname: string;
    inboundTlsFlushMs: number;
  },
): Reports {
  const store = createReportStore(deps);
  const inboundTls = createInboundTls({ ...deps, flushEveryMs: deps.inboundTlsFlushMs });
  const read = createReportReading({ maxRows: deps.maxRows, batch: RECORD_BATCH });
  const inbox = createReportInbox({ ...deps, store, read });

  async function domainsOf(workspaceId: string, domain: string | undefined): Promise<string[]> {
    let q = deps.db
      .selectFrom('domains')
      .select('domain')
      .where('workspace_id', '=', workspaceId)
      .where('kind', '=', 'custom')
      .where('deleted_at', 'is', null);
    if (domain !== undefined) q = q.where('domain', '=', domain.toLowerCase());
    const rows = await q.execute();
    if (domain !== undefined && rows.length === 0) throw notFound(`domain ${domain}`);
    return rows.map((r) => r.domain);
  }

  return {
    store,
    inbox,
    inboundTls,
    async dmarc(workspaceId, q) {
      const own = new Set(deps.ownAddresses().map((a) => a.toLowerCase()));
      return store.dmarcSummary({ domains: await domainsOf(workspaceId, q.domain), from: q.from, to: q.to, own });
    },
    async tls(workspaceId, q) {
      const data = await store.tlsSummary({ domains: await domainsOf(workspaceId, q.domain), from: q.from, to: q.to });
      return { data, inbound: await inboundTls.summary({ from: q.from, to: q.to }) };
    },
  };
}
