// DMARC and TLS reports: the ones mailed in, read and stored by day, and the summary of inbound TLS.
// This is the area's public face: the rest of the daemon imports only what it names (the `areas-
// through-their-face` rule).
export type { InboundTlsOutcome } from './inbound-tls.js';
export { type IngestOutcome, REPORT_LOCAL_PART, type ReportInbox } from './inbox.js';
export type { ReportQuery, Reports } from './reports.js';
