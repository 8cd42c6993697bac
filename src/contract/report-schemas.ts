// The reports as the API shows them: DMARC and TLS days (GET /v1/reports/dmarc and /tls), the
// inbound STARTTLS days, and the query both take, as zod schemas.
// Part of the contract (src/contract/): it imports zod and other contract files only, so the
// daemon, the dashboard (types) and the SDK generator read the same shapes.
import { z } from 'zod';

/**
 * Why an inbound STARTTLS handshake failed. `certificate-not-trusted` and `certificate-expired` are
 * RFC 8460's (4.3) and come from the alert the client sent about our certificate; the others are
 * Postern's, for what RFC 8460 has no name for, seen from the receiving side.
 */
export const INBOUND_TLS_FAILURES = [
  /** The client offered only protocol versions below TLS 1.2. */
  'protocol-version',
  /** No cipher suite, key-exchange group or signature algorithm in common. */
  'no-shared-cipher',
  /** The client refused our certificate (unknown CA, bad or unknown certificate, wrong name). */
  'certificate-not-trusted',
  /** The client found our certificate expired. */
  'certificate-expired',
  /** The client did not finish the handshake in time (smtp.commandTimeout, smtp.socketTimeout). */
  'handshake-timeout',
  /** The client closed or reset the connection in the middle of the handshake, without an alert. */
  'handshake-aborted',
  /** Anything else (a malformed hello, another alert). */
  'starttls-handshake-failure',
] as const;
export type InboundTlsFailure = (typeof INBOUND_TLS_FAILURES)[number];

const day = z.iso.date();

/** The query of GET /v1/reports/dmarc and /tls, as the route reads it (the API description uses it too). */
export const reportQuery = z.strictObject({
  domain: z.string().min(1).max(253).optional(),
  from: day.optional(),
  to: day.optional(),
});

const sources = z.array(z.object({ ip: z.string(), count: z.number().int() }));

export const dmarcDaySchema = z
  .object({
    domain: z.string(),
    day: z.string(),
    messages: z.number().int(),
    passed: z.number().int(),
    passRate: z.number(),
    dispositions: z.object({ none: z.number().int(), quarantine: z.number().int(), reject: z.number().int() }),
    own: z.object({ messages: z.number().int(), passed: z.number().int() }),
    foreign: z.object({ messages: z.number().int(), passed: z.number().int() }),
    failingSources: z.object({ own: sources, foreign: sources }),
    reports: z.number().int(),
  })
  .meta({ id: 'DmarcDay' });

export const tlsDaySchema = z
  .object({
    domain: z.string(),
    day: z.string(),
    successful: z.number().int(),
    failed: z.number().int(),
    failures: z.record(z.string(), z.number().int()),
    reports: z.number().int(),
  })
  .meta({ id: 'TlsDay' });

/** One inbound day as GET /v1/reports/tls answers it (`inbound`), for the API description. */
export const inboundTlsDaySchema = z
  .object({
    hostname: z.string(),
    day: z.string(),
    successful: z.number().int(),
    failed: z.number().int(),
    failures: z.record(z.string(), z.number().int()).describe(`failed sessions by result type: ${INBOUND_TLS_FAILURES.join(', ')}`),
  })
  .meta({ id: 'InboundTlsDay' });
