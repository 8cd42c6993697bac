// An SMTP pool (smtp-pool.ts) hosted on a render thread, and what crosses between the threads.
// The thread holds the connections and speaks SMTP; the event loop keeps everything that needs
// the database or decides an outcome (routes, rate limits, recipients, classification), and sees
// each transaction only as its result. Errors cross as their fields (responseCode, response,
// command, code, the recipient of a RCPT rejection): classification reads those fields, never
// the class, and a structured clone would keep only the message.
import { createSmtpPool, type PoolOptions, type SendResult, type SmtpError, type SmtpPool, type Target } from './smtp-pool.js';

/** The pool's settings as they cross to the thread (its logger stays behind). */
export type PoolSpec = Omit<PoolOptions, 'log'> & { debug: boolean };

export type PoolCall =
  | { pool: number; spec: PoolSpec; op: 'send'; target: Target; envelope: { from: string; to: string[] }; raw: Uint8Array }
  | { pool: number; spec: PoolSpec; op: 'close' };

export interface WireError {
  message: string;
  code?: string;
  responseCode?: number;
  response?: string;
  command?: string;
  recipient?: string;
  rejectedErrors?: WireError[];
}

export type WireSendResult = Omit<SendResult, 'rejected'> & { rejected: { address: string; error: WireError }[] };

/** The fields of an SMTP error that classification and the timeline read. */
export function errorToWire(err: unknown): WireError {
  const e = err as SmtpError & { recipient?: string };
  const w: WireError = { message: e?.message ?? String(err) };
  if (e?.code !== undefined) w.code = e.code;
  if (typeof e?.responseCode === 'number') w.responseCode = e.responseCode;
  if (e?.response !== undefined) w.response = e.response;
  if (e?.command !== undefined) w.command = e.command;
  if (e?.recipient !== undefined) w.recipient = e.recipient;
  if (e?.rejectedErrors?.length) w.rejectedErrors = e.rejectedErrors.map(errorToWire);
  return w;
}

/** An SmtpError again, with the same fields. */
export function errorFromWire(w: WireError): SmtpError {
  const { message, rejectedErrors, ...fields } = w;
  return Object.assign(new Error(message), fields, rejectedErrors ? { rejectedErrors: rejectedErrors.map(errorFromWire) } : {});
}

function resultToWire(r: SendResult): WireSendResult {
  return { ...r, rejected: r.rejected.map((x) => ({ address: x.address, error: errorToWire(x.error) })) };
}

export function resultFromWire(w: WireSendResult): SendResult {
  return { ...w, rejected: w.rejected.map((x) => ({ address: x.address, error: errorFromWire(x.error) })) };
}

export type PoolLogLine = { msg: string; obj: object };

/** The thread's side: the pools it hosts, by id, created by their first call. */
export function createPoolHost(log: (line: PoolLogLine) => void): { call(c: PoolCall): Promise<WireSendResult | null> } {
  const pools = new Map<number, SmtpPool>();
  const poolOf = (c: PoolCall): SmtpPool => {
    let pool = pools.get(c.pool);
    if (!pool) {
      const { debug, ...spec } = c.spec;
      const quiet = () => {};
      // The pool logs at debug level only; the lines go to the daemon's logger when it wants them.
      const logger = { debug: debug ? (obj: object, msg: string) => log({ obj, msg }) : quiet } as unknown as PoolOptions['log'];
      pools.set(c.pool, (pool = createSmtpPool({ ...spec, log: logger })));
    }
    return pool;
  };
  return {
    async call(c) {
      if (c.op === 'close') {
        const pool = pools.get(c.pool);
        pools.delete(c.pool);
        await pool?.close();
        return null;
      }
      const raw = Buffer.from(c.raw.buffer, c.raw.byteOffset, c.raw.byteLength);
      return resultToWire(await poolOf(c).send(c.target, c.envelope, raw));
    },
  };
}
