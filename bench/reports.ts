// A large DMARC report through the report address: the 29 MiB (0.44 MiB gzipped, 33,000 records)
// report of test/helpers/report-load.ts mailed to reports@ the bounce domain of a real daemon, while
// one client asks GET /healthz and another opens SMTP sessions (connect, EHLO, QUIT) one after the
// other. Prints the time to the 250, the latencies before and during, the daemon's event-loop delay
// p99 during (prom-client, reset at each scrape), and its resident memory before, at peak and after.
// BENCH_REPORTS_POSTGRES (a server's URL, as POSTERN_TEST_DATABASE_URL) runs it on PostgreSQL, in a
// database made for the run and dropped after it; SQLite otherwise.
import { rmSync } from 'node:fs';
import nodemailer from 'nodemailer';
import { freshPostgres } from '../test/helpers/databases.js';
import { scrape, total } from '../test/helpers/metrics.js';
import { bigReport, MiB, p99, RECORDS, rssOf, sample } from '../test/helpers/report-load.js';
import { peakRss, startPostern } from './lib.js';

export async function run(): Promise<void> {
  const report = bigReport();
  const admin = process.env.BENCH_REPORTS_POSTGRES;
  const database = admin ? await freshPostgres({ admin }) : null;
  const postern = await startPostern({
    POSTERN_HOSTNAME: 'mx.postern.test',
    POSTERN_DNS_SERVERS: '127.0.0.1:9',
    POSTERN_LOG_LEVEL: 'error',
    POSTERN_DATABASE_URL: database?.url ?? '',
  });
  const pid = postern.child.pid!;
  const mail = (content: Buffer, id: string) =>
    nodemailer.createTransport({ host: '127.0.0.1', port: postern.smtp!, secure: false, ignoreTLS: true }).sendMail({
      from: 'noreply-dmarc@bigmail.example',
      to: 'reports@bounces.mx.postern.test',
      subject: `Report-ID: ${id}`,
      text: 'This is an aggregate report.',
      attachments: [{ filename: `${id}.xml.gz`, content, contentType: 'application/gzip' }],
    });
  // Warm-up: a one-record report takes the same path first.
  const xml = report.xml.toString();
  const one = xml.slice(0, xml.indexOf('</record>') + 9).replace('big-1', 'warm-1') + '</feedback>';
  const { gzipSync } = await import('node:zlib');
  await mail(gzipSync(one), 'warm-1');

  const baseline = await sample(postern.port, postern.smtp!, () => true, 150);
  const rssBefore = rssOf(pid);
  await scrape(postern.metrics!);
  let done = false;
  const start = performance.now();
  const sent = mail(report.gz, 'big-1').finally(() => (done = true));
  const during = await sample(postern.port, postern.smtp!, () => done, 20);
  const info = await sent;
  const seconds = (performance.now() - start) / 1000;
  const loop = (await scrape(postern.metrics!)).samples;
  const lag = total(loop, 'nodejs_eventloop_lag_p99_seconds') * 1000;
  const lagMax = total(loop, 'nodejs_eventloop_lag_max_seconds') * 1000;
  let rss = rssOf(pid);
  for (const deadline = Date.now() + 30_000; rss - rssBefore > 50 * MiB && Date.now() < deadline;) {
    await new Promise((r) => setTimeout(r, 250));
    rss = rssOf(pid);
  }
  console.log(
    `report ${(report.xml.length / MiB).toFixed(1)} MiB XML, ${(report.gz.length / MiB).toFixed(2)} MiB gzip, ${RECORDS} records; ${database ? 'PostgreSQL' : 'SQLite'}`,
  );
  console.log(`reply ${info.response.slice(0, 40)} after ${seconds.toFixed(1)} s`);
  console.log('                 baseline p99 ms   during p99 ms   during max ms');
  for (const [name, b, d] of [
    ['GET /healthz', baseline.api, during.api],
    ['SMTP EHLO+QUIT', baseline.smtp, during.smtp],
  ] as const) {
    console.log(
      `${name.padEnd(16)} ${p99(b).toFixed(1).padStart(15)} ${p99(d).toFixed(1).padStart(15)} ${Math.max(...d)
        .toFixed(1)
        .padStart(15)}`,
    );
  }
  console.log(`event-loop delay during: p99 ${lag.toFixed(1)} ms, max ${lagMax.toFixed(1)} ms`);
  console.log(
    `RSS before ${(rssBefore / MiB).toFixed(0)} MiB, peak ${(peakRss(pid) / MiB).toFixed(0)} MiB, after ${(rss / MiB).toFixed(0)} MiB`,
  );
  await postern.stop();
  await database?.drop();
  rmSync(postern.dataDir, { recursive: true, force: true });
}
