// The public face of reports/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export type { InboundTlsOutcome } from './inbound-tls.js';
export { type IngestOutcome, REPORT_LOCAL_PART, type ReportInbox } from './inbox.js';
export type { ReportQuery, Reports } from './reports.js';
