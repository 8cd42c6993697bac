// Inbound acceptance: messages/s and p99 per message through Postern's SMTP listener (RCPT policy,
// SPF/DKIM/DMARC/ARC via mailauth against a loopback DNS server, mailparser, durable commit with
// synchronous=FULL before 250) next to a bare smtp-server that discards the data, same run, same
// client. Sizes 5 KiB and 100 KiB; 20 and 100 concurrent sessions; a new connection per message
// (as real senders do) and reused connections. The client speaks SMTP on raw sockets (no STARTTLS
// on either side) so client CPU stays small on a shared 2-core machine. Bounded per scenario.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { signMessage } from '../src/channels/email/dkim.js';
import { loadConfig } from '../src/config.js';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { benchWorkspace, cpuSeconds, peakRss, startPostern, startScript } from './lib.js';
import { startPostfix } from './postfix.js';
import { Client, message, type MessageForm } from './smtp-client.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const MAX_MESSAGES = 20_000;
// The pause before the 220 greeting, for Postern and the bare server alike; Postern's configured
// default when unset. 100 ms (smtp-server's built-in) caps each session at ~10 new connections/s.
// BENCH_INBOUND_FORM=alternative sends multipart/alternative mail (text and HTML) instead of one
// text/plain part; =mixed sends mail with a PDF attached and quoted-printable HTML, 50 KiB and
// 1 MiB, DKIM-signed by bench.example.org with a DMARC policy published, so every check runs to a
// pass (bench/smtp-client.ts).
const FORMS: Record<string, MessageForm> = { alternative: 'alternative', mixed: 'mixed' };
const FORM: MessageForm = FORMS[process.env.BENCH_INBOUND_FORM ?? ''] ?? 'plain';
const SIZES = FORM === 'mixed' ? [50 * 1024, 1024 * 1024] : [5 * 1024, 100 * 1024];
const DESCRIBED: Record<MessageForm, string> = {
  plain: 'one text/plain part',
  alternative: 'multipart/alternative (text and HTML)',
  mixed: 'multipart/mixed (text, quoted-printable HTML, a base64 PDF), DKIM-signed, DMARC published',
};
const { privateKey, publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});
const GREETING_DELAY_MS = process.env.BENCH_GREETING_DELAY_MS === undefined ? undefined : Number(process.env.BENCH_GREETING_DELAY_MS);

let sequence = 0;

interface Result {
  rate: number;
  p99: number;
  count: number;
  errors: number;
}

async function scenario(port: number, to: string, size: number, sessions: number, reuse: boolean, seconds = SECONDS): Promise<Result> {
  const raw = message(size, to, FORM);
  const body = FORM === 'mixed' ? signMessage(raw, { domain: 'bench.example.org', selector: 'bench', privateKey }) : raw;
  const latencies: number[] = [];
  let errors = 0;
  const deadline = performance.now() + seconds * 1000;
  const start = performance.now();
  const worker = async () => {
    let client: Client | null = null;
    while (performance.now() < deadline && latencies.length < MAX_MESSAGES) {
      const t0 = performance.now();
      try {
        if (!client) client = await Client.open(port);
        // Each message different by a field above the signed ones: Postern stores a copy of the
        // same bytes sent again within inbound.retryWindow only once (a sender's retry).
        await client.send(to, body, `X-Bench-Sequence: ${++sequence}\r\n`);
        latencies.push(performance.now() - t0);
        if (!reuse) {
          client.close();
          client = null;
        }
      } catch {
        errors++;
        client?.close();
        client = null;
      }
    }
    client?.close();
  };
  await Promise.all(Array.from({ length: sessions }, worker));
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { rate: latencies.length / elapsed, p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0, count: latencies.length, errors };
}

export async function run(): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-bench-inbound-'));
  const dns = await startDnsServer({
    'bench.example.org': [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }],
    'bench._domainkey.bench.example.org': [{ type: 'TXT', data: `v=DKIM1; k=rsa; p=${publicKey.replace(/-----[^-]+-----|\s/g, '')}` }],
    '_dmarc.bench.example.org': [{ type: 'TXT', data: 'v=DMARC1; p=reject' }],
  });
  const env: Record<string, string> = {
    POSTERN_DATA_DIR: dataDir,
    POSTERN_HOSTNAME: 'mx.postern.test',
    POSTERN_SHARED_INBOUND_DOMAIN: 'postern.test',
    POSTERN_DNS_SERVERS: dns.address,
    POSTERN_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'error',
    POSTERN_PLANS_FREE_INBOUND_PER_MONTH: '0',
    POSTERN_SMTP_MAX_CLIENTS: '1000',
    ...(GREETING_DELAY_MS === undefined ? {} : { POSTERN_SMTP_GREETING_DELAY: `${GREETING_DELAY_MS}ms` }),
    ...(Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('POSTERN_'))) as Record<string, string>),
  };
  const key = await benchWorkspace(env, { keyEnv: 'live' });
  const prof = process.env.BENCH_INBOUND_PROFILE;
  const postern = await startPostern(env, prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []);
  const res = await fetch(`http://127.0.0.1:${postern.port}/v1/inbound/addresses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ localPart: 'inbox' }),
  });
  if (res.status !== 201) throw new Error(`creating the address: ${res.status} ${await res.text()}`);
  const address = ((await res.json()) as { address: string }).address;
  const delay = GREETING_DELAY_MS ?? loadConfig({ env }).smtp.greetingDelay;
  const bare = await startScript('bare-smtp.ts', { BENCH_GREETING_DELAY_MS: String(delay) });
  const pid = postern.child.pid!;
  // Postfix beside it (bench/postfix.ts), driven by the same client: the ratio in one run.
  const postfix = await startPostfix();
  if ('unavailable' in postfix) console.log(`postfix: not run (${postfix.unavailable})`);
  const pf = 'port' in postfix ? postfix : null;

  // Warm-up, not reported: the first connection starts Postern's analysis threads and JIT warms both.
  await scenario(postern.smtp!, address, 5 * 1024, 20, true, 1);
  await scenario(bare.port, address, 5 * 1024, 20, true, 1);
  if (pf) {
    await scenario(pf.port, address, 5 * 1024, 20, true, 1);
    await pf.drained();
  }

  console.log(
    `${SECONDS}s per scenario; ${DESCRIBED[FORM]}; greeting delay ${delay} ms (both servers); each server is its own process; latency = connect (new connection) or MAIL FROM (reused) to 250; CPU = Postern's own per message`,
  );
  if (pf)
    console.log(
      `postfix ${pf.version}: fsyncs each queue file before 250, verifies nothing, relays to smtp-sink; its queue drains before and after each of its runs`,
    );
  console.log(
    'size    sessions connection | postern msg/s  p99 ms  CPU ms | bare smtp-server msg/s  p99 ms | postfix msg/s  p99 ms  postern/postfix',
  );
  for (const size of SIZES) {
    for (const sessions of [20, 100]) {
      for (const reuse of [false, true]) {
        // BENCH_ONLY=100-20-reused runs one scenario (for profiling).
        const only = process.env.BENCH_ONLY;
        if (only && only !== `${size / 1024}-${sessions}-${reuse ? 'reused' : 'new'}`) continue;
        const cpu0 = cpuSeconds(pid);
        const p = await scenario(postern.smtp!, address, size, sessions, reuse);
        const cpuMs = ((cpuSeconds(pid) - cpu0) * 1000) / Math.max(1, p.count);
        const b = process.env.BENCH_NO_BARE
          ? { rate: 0, p99: 0, count: 0, errors: 0 }
          : await scenario(bare.port, address, size, sessions, reuse);
        let x: Result | null = null;
        if (pf) {
          await pf.drained();
          x = await scenario(pf.port, address, size, sessions, reuse);
          // Postfix relays what it took after the run: the next scenario's Postern must not share
          // the cores with that.
          await pf.drained();
        }
        const fmt = (r: Result) =>
          `${r.rate.toFixed(0).padStart(6)} ${r.p99.toFixed(1).padStart(7)}${r.errors ? ` (${r.errors} errors)` : ''}`;
        console.log(
          `${String(size / 1024).padStart(3)} KiB ${String(sessions).padStart(8)} ${(reuse ? 'reused' : 'new').padEnd(10)} | ${fmt(p)} ${cpuMs.toFixed(2).padStart(7)} | ${fmt(b)}` +
            (x ? ` | ${fmt(x)} ${(p.rate / Math.max(1, x.rate)).toFixed(2).padStart(6)}` : ''),
        );
      }
    }
  }
  console.log(`postern peak RSS ${Math.round(peakRss(pid) / 1048576)} MiB`);
  await postern.stop();
  await bare.stop();
  if (pf) await pf.stop();
  await dns.close();
  const db = new Sqlite(path.join(dataDir, 'postern.sqlite'), { readonly: true });
  const stored = db.prepare('SELECT count(*) AS n FROM received_messages').get() as { n: number };
  // What the checks concluded, so a run whose messages were not verified is seen to be one.
  const verdicts = db
    .prepare(
      `SELECT json_extract(parsed, '$.verdicts.spf.result') AS spf, json_extract(parsed, '$.verdicts.dkim.result') AS dkim,
              json_extract(parsed, '$.verdicts.dmarc.result') AS dmarc, count(*) AS n
       FROM received_messages GROUP BY 1, 2, 3 ORDER BY n DESC`,
    )
    .all() as { spf: string; dkim: string; dmarc: string; n: number }[];
  db.close();
  console.log(`stored by postern: ${stored.n} messages`);
  for (const v of verdicts) console.log(`  SPF ${v.spf}, DKIM ${v.dkim}, DMARC ${v.dmarc}: ${v.n}`);
  rmSync(dataDir, { recursive: true, force: true });
}
