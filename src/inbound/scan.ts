// Spam and virus verdicts on received mail, from the scanners an operator already runs: rspamd
// over its HTTP protocol (POST /checkv2 with the envelope in headers) and ClamAV's clamd over its
// INSTREAM protocol (TCP host:port or a Unix socket). Both run beside verification, before the 250,
// each bounded in time: a scanner that is down or slow gives `temperror` and the message is stored
// anyway (a scanner outage must not bounce or delay mail). Without a scanner the verdict is `none`.
import net from 'node:net';
import type { Config } from '../config.js';
import type { Logger } from '../lib/logger.js';

export interface SpamVerdict {
  /** ham, spam (rspamd chose an action other than `no action`/`greylist`), temperror, or none. */
  result: 'ham' | 'spam' | 'temperror' | 'none';
  score?: number;
  requiredScore?: number;
  action?: string;
  /** Symbol → score, as rspamd gave them. */
  symbols?: Record<string, number>;
  details?: string;
}

export interface VirusVerdict {
  /** clean, infected, temperror, or none. */
  result: 'clean' | 'infected' | 'temperror' | 'none';
  /** The signature clamd found. */
  signature?: string;
  details?: string;
}

export interface ScanInput {
  raw: Buffer;
  ip: string;
  helo: string;
  mailFrom: string;
  recipients: string[];
}

export interface ScanResult {
  spam: SpamVerdict;
  virus: VirusVerdict;
  /** Why the message must be refused (the listener answers 550/554), or null. */
  refuse: { reason: 'spam'; score: number } | { reason: 'virus'; signature: string } | null;
}

export interface Scanner {
  /** False when no scanner is configured: the verdicts are `none` without a call. */
  readonly enabled: boolean;
  scan(input: ScanInput): Promise<ScanResult>;
}

export const NO_SCAN = { spam: { result: 'none' }, virus: { result: 'none' } } as const;

const HAM_ACTIONS = new Set(['no action', 'greylist']);

/** rspamd's verdict on a message (also the outbound checks' spam score, outbound/checks/). */
export async function rspamdVerdict(url: string, timeoutMs: number, input: ScanInput, hostname: string): Promise<SpamVerdict> {
  const headers: [string, string][] = [
    ['IP', input.ip],
    ['Helo', input.helo || input.ip],
    ['From', input.mailFrom],
    ['MTA-Name', hostname],
    ['Content-Type', 'message/rfc822'],
  ];
  for (const r of input.recipients) headers.push(['Rcpt', r]);
  try {
    const res = await fetch(`${url.replace(/\/+$/, '')}/checkv2`, {
      method: 'POST',
      headers,
      body: input.raw,
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) return { result: 'temperror', details: `rspamd answered ${res.status}` };
    const body = (await res.json()) as {
      score?: number;
      required_score?: number;
      action?: string;
      symbols?: Record<string, { score?: number }>;
    };
    if (typeof body.score !== 'number' || typeof body.action !== 'string') return { result: 'temperror', details: 'rspamd gave no score' };
    const symbols: Record<string, number> = {};
    for (const [name, s] of Object.entries(body.symbols ?? {})) symbols[name] = Math.round((s.score ?? 0) * 1000) / 1000;
    return {
      result: HAM_ACTIONS.has(body.action) ? 'ham' : 'spam',
      score: Math.round(body.score * 1000) / 1000,
      requiredScore: body.required_score,
      action: body.action,
      symbols,
    };
  } catch (err) {
    const e = err as Error & { cause?: Error };
    const why = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.cause?.message ?? e.message);
    return { result: 'temperror', details: `rspamd: ${why}` };
  }
}

/** clamd's INSTREAM: the message in length-prefixed chunks, a zero-length chunk, one reply line. */
function clamd(address: string, timeoutMs: number, raw: Buffer): Promise<VirusVerdict> {
  return new Promise((resolve) => {
    const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(address);
    const socket = m ? net.connect(Number(m[2]), m[1].replace(/^\[|\]$/g, '')) : net.connect(address);
    let reply = '';
    let done = false;
    const finish = (v: VirusVerdict) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => finish({ result: 'temperror', details: `clamd: no answer within ${timeoutMs} ms` }), timeoutMs);
    socket.on('error', (err) => finish({ result: 'temperror', details: `clamd: ${err.message}` }));
    socket.on('data', (d) => {
      reply += d.toString('utf8');
      if (reply.includes('\0')) socket.end();
    });
    socket.on('close', () => {
      const line = reply.replace(/\0.*$/s, '').trim();
      const found = /^stream: (.+) FOUND$/.exec(line);
      if (found) finish({ result: 'infected', signature: found[1] });
      else if (line === 'stream: OK') finish({ result: 'clean' });
      else finish({ result: 'temperror', details: `clamd: ${line.slice(0, 200) || 'closed without a verdict'}` });
    });
    socket.on('connect', () => {
      socket.write('zINSTREAM\0');
      const CHUNK = 64 * 1024;
      for (let i = 0; i < raw.length; i += CHUNK) {
        const part = raw.subarray(i, i + CHUNK);
        const len = Buffer.alloc(4);
        len.writeUInt32BE(part.length);
        socket.write(len);
        socket.write(part);
      }
      socket.write(Buffer.alloc(4));
    });
  });
}

export function createScanner({ config, log }: { config: Pick<Config, 'inbound' | 'hostname'>; log: Logger }): Scanner {
  const { rspamd: rs, clamd: cd } = config.inbound;
  const enabled = rs.url !== '' || cd.address !== '';
  return {
    enabled,
    async scan(input) {
      const [spam, virus] = await Promise.all([
        rs.url ? rspamdVerdict(rs.url, rs.timeout, input, config.hostname) : Promise.resolve<SpamVerdict>({ result: 'none' }),
        cd.address ? clamd(cd.address, cd.timeout, input.raw) : Promise.resolve<VirusVerdict>({ result: 'none' }),
      ]);
      if (spam.result === 'temperror') log.warn({ details: spam.details }, 'spam check unavailable; message stored unchecked');
      if (virus.result === 'temperror') log.warn({ details: virus.details }, 'virus check unavailable; message stored unchecked');
      let refuse: ScanResult['refuse'] = null;
      if (virus.result === 'infected' && cd.reject) refuse = { reason: 'virus', signature: virus.signature ?? 'unknown' };
      else if (rs.rejectScore > 0 && spam.score !== undefined && spam.score >= rs.rejectScore)
        refuse = { reason: 'spam', score: spam.score };
      return { spam, virus, refuse };
    },
  };
}
