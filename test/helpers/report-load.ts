// Load on the report address, for the ingest test (test/reports/ingest-load.test.ts) and the reports
// benchmark (bench/reports.ts): a large DMARC report made the same way every run, and the latency
// probes a client and a sending MTA see (GET /healthz; SMTP connect, EHLO, QUIT), sampled while
// something else happens.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { gzipSync } from 'node:zlib';

/** Records of the big report: about 29 MiB of XML, 0.44 MiB gzipped. */
export const RECORDS = 33_000;
export const MiB = 1024 * 1024;

/**
 * A report as a large receiver writes it: RECORDS records of one day, sources and counts from a
 * fixed pseudo-random sequence, so every run sends the same bytes and gzip shrinks them as it does
 * real ones.
 */
export function bigReport(): { xml: Buffer; gz: Buffer } {
  let seed = 42;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed % n;
  };
  const parts: string[] = [
    '<?xml version="1.0" encoding="UTF-8" ?>\n<feedback>\n  <version>1.0</version>\n  <report_metadata>\n    <org_name>bigmail.example</org_name>\n    <email>noreply-dmarc@bigmail.example</email>\n    <report_id>big-1</report_id>\n    <date_range>\n      <begin>1764201600</begin>\n      <end>1764287999</end>\n    </date_range>\n  </report_metadata>\n  <policy_published>\n    <domain>example.com</domain>\n    <adkim>r</adkim>\n    <aspf>r</aspf>\n    <p>none</p>\n    <sp>none</sp>\n    <pct>100</pct>\n  </policy_published>\n',
  ];
  for (let i = 0; i < RECORDS; i++) {
    const ip = `${next(223) + 1}.${next(256)}.${next(256)}.${next(256)}`;
    const pass = next(10) > 1;
    const selector = `s${next(40)}`;
    parts.push(
      `  <record>\n    <row>\n      <source_ip>${ip}</source_ip>\n      <count>${next(5000) + 1}</count>\n      <policy_evaluated>\n        <disposition>none</disposition>\n        <dkim>${pass ? 'pass' : 'fail'}</dkim>\n        <spf>${next(2) ? 'pass' : 'fail'}</spf>\n${pass ? '' : '        <reason>\n          <type>forwarded</type>\n          <comment>arrived through a mailing list relay</comment>\n        </reason>\n'}      </policy_evaluated>\n    </row>\n    <identifiers>\n      <header_from>example.com</header_from>\n      <envelope_from>bounces.example.com</envelope_from>\n    </identifiers>\n    <auth_results>\n      <dkim>\n        <domain>example.com</domain>\n        <selector>${selector}</selector>\n        <result>${pass ? 'pass' : 'fail'}</result>\n        <human_result>signature verified against the published key</human_result>\n      </dkim>\n      <dkim>\n        <domain>esp${next(20)}.example.net</domain>\n        <selector>${selector}</selector>\n        <result>pass</result>\n      </dkim>\n      <spf>\n        <domain>bounces.example.com</domain>\n        <scope>mfrom</scope>\n        <result>${next(2) ? 'pass' : 'softfail'}</result>\n      </spf>\n    </auth_results>\n  </record>\n`,
    );
  }
  parts.push('</feedback>\n');
  const xml = Buffer.from(parts.join(''));
  return { xml, gz: gzipSync(xml, { level: 9 }) };
}

export const p99 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.99) - 1)];
};

/** Milliseconds of connect, greeting, EHLO and QUIT to the listener. */
function smtpSession(port: number): Promise<number> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let buf = '';
    let step = 0;
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      buf += d;
      // A reply is complete at its last line: code and a space.
      if (!/(^|\r\n)\d{3} [^\r\n]*\r\n$/.test(buf)) return;
      buf = '';
      if (step === 0) socket.write('EHLO load.example\r\n');
      else if (step === 1) socket.write('QUIT\r\n');
      else {
        socket.end();
        resolve(performance.now() - start);
      }
      step++;
    });
    socket.on('error', reject);
  });
}

async function healthz(port: number): Promise<number> {
  const start = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}/healthz`);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
  return performance.now() - start;
}

/** Samples both latencies, one after the other, until `until` says stop (and at least `min` of each). */
export async function sample(http: number, smtp: number, until: () => boolean, min: number): Promise<{ api: number[]; smtp: number[] }> {
  const out = { api: [] as number[], smtp: [] as number[] };
  const loop = async (fn: () => Promise<number>, into: number[]) => {
    while (!until() || into.length < min) {
      into.push(await fn());
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  await Promise.all([loop(() => healthz(http), out.api), loop(() => smtpSession(smtp), out.smtp)]);
  return out;
}

export const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
