// A large DMARC report must not stop the daemon. The real binary on SQLite and on PostgreSQL is sent
// a gzip report of about 0.45 MB that unpacks to about 30 MB of XML (33,000 records, under the
// 32 MiB and 100,000-record caps) over SMTP, while a client keeps asking /healthz and another keeps
// opening SMTP sessions (connect, EHLO, QUIT). Before reports were read in a thread, the event loop
// stopped for the whole parse: 20-47 s on the drill's machine, 9.4 s of the 10.4 s the report took in
// the benchmark. So what is held here is measured against the same run's own report, not against a
// number of milliseconds a busy machine can miss (the figures are bench/reports.ts's to print): no
// probe, and no stop of the daemon's event loop (prom-client's nodejs_eventloop_lag_max_seconds,
// reset at each scrape), lasts a quarter of the time the report took to its 250. Once the report is
// stored the daemon's resident memory comes back within 50 MiB of what it was before.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import nodemailer from 'nodemailer';
import t from 'tap';
import { freshPostgres, testDatabases } from '../helpers/databases.js';
import { scrape, total } from '../helpers/metrics.js';
import { bigReport, MiB, p99, RECORDS, rssOf, sample } from '../helpers/report-load.js';
import { spawnDaemon } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';

/** Time allowed for the report to be stored once sent; it takes a few seconds on an idle machine. */
const STORE_BOUND_MS = 60_000;

const report = bigReport();

for (const db of testDatabases())
  t.test(`a 30 MB DMARC report does not stop SMTP, the API or the event loop, and its memory goes back (${db})`, async (t) => {
    t.comment(`report: ${(report.xml.length / MiB).toFixed(1)} MiB of XML, ${(report.gz.length / MiB).toFixed(2)} MiB gzipped`);
    t.ok(report.xml.length > 28 * MiB && report.xml.length < 32 * MiB, 'about 30 MB of XML');
    t.ok(report.gz.length > 0.3 * MiB && report.gz.length < 0.6 * MiB, 'about half a MB gzipped');
    const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-report-load-'));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    let databaseUrl = '';
    if (db === 'postgres') {
      const fresh = await freshPostgres();
      databaseUrl = fresh.url;
      t.teardown(() => fresh.drop());
    }
    const daemon = await spawnDaemon({
      POSTERN_DATA_DIR: dataDir,
      POSTERN_DATABASE_URL: databaseUrl,
      POSTERN_HTTP_PORT: '0',
      POSTERN_SMTP_PORT: '0',
      POSTERN_SMTP_HOST: '127.0.0.1',
      POSTERN_HTTP_HOST: '127.0.0.1',
      POSTERN_HOSTNAME: 'mx.postern.test',
      POSTERN_DNS_SERVERS: '127.0.0.1:9',
    });
    t.teardown(() => {
      if (daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    });
    const pid = daemon.child.pid!;
    const mail = (content: Buffer, name: string) =>
      nodemailer
        .createTransport({ host: '127.0.0.1', port: daemon.smtp, secure: false, ignoreTLS: true, name: 'mx.bigmail.example' })
        .sendMail({
          from: 'noreply-dmarc@bigmail.example',
          to: 'reports@bounces.mx.postern.test',
          subject: `Report Domain: example.com Submitter: bigmail.example Report-ID: ${name}`,
          text: 'This is an aggregate report.',
          attachments: [{ filename: `${name}.xml.gz`, content, contentType: 'application/gzip' }],
        });
    /** The records of the stored report with this subject's sender, as the daemon logged them. */
    const storedRecords = () =>
      daemon.lines
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg?: string; records?: number })
        .filter((l) => l.msg === 'report stored')
        .map((l) => l.records);

    // Warm: a small report takes the same path once, so the baseline has paid for loading it.
    const small = report.xml.toString().replace('big-1', 'small-1');
    const head = small.slice(0, small.indexOf('<record>'));
    const first = small.indexOf('</record>') + '</record>'.length;
    t.match((await mail(gzipSync(head + small.slice(small.indexOf('<record>'), first) + '</feedback>'), 'small-1')).response, /^250 /);

    const baseline = await sample(daemon.http, daemon.smtp, () => true, 150);
    const rssBefore = rssOf(pid);
    await scrape(daemon.metrics!); // resets the event-loop delay histogram

    let done = false;
    const start = performance.now();
    const sent = mail(report.gz, 'big-1').then(
      (info) => {
        done = true;
        return info.response;
      },
      (err: Error) => {
        done = true;
        return err.message;
      },
    );
    const timer = setTimeout(() => (done = true), STORE_BOUND_MS);
    const during = await sample(daemon.http, daemon.smtp, () => done, 20);
    clearTimeout(timer);
    const reply = await sent;
    const reportMs = performance.now() - start;
    const loop = (await scrape(daemon.metrics!)).samples;
    const lagMax = total(loop, 'nodejs_eventloop_lag_max_seconds') * 1000;
    t.match(reply, /^250 /, 'the report is stored before the reply');
    t.same(storedRecords(), [1, RECORDS], 'every record is stored');

    const figures = {
      reportMs,
      api: { baseline: p99(baseline.api), during: p99(during.api), longest: Math.max(...during.api), samples: during.api.length },
      smtp: { baseline: p99(baseline.smtp), during: p99(during.smtp), longest: Math.max(...during.smtp), samples: during.smtp.length },
      eventLoopP99Ms: total(loop, 'nodejs_eventloop_lag_p99_seconds') * 1000,
      eventLoopMaxMs: lagMax,
    };
    t.comment(JSON.stringify(figures));
    const quarter = reportMs / 4;
    t.ok(figures.api.longest < quarter, `no /healthz waited a quarter of the report's ${reportMs.toFixed(0)} ms (longest ${figures.api.longest.toFixed(0)} ms)`);
    t.ok(figures.smtp.longest < quarter, `no SMTP session waited a quarter of the report's ${reportMs.toFixed(0)} ms (longest ${figures.smtp.longest.toFixed(0)} ms)`);
    t.ok(lagMax < quarter, `no stop of the event loop lasted a quarter of the report's ${reportMs.toFixed(0)} ms (longest ${lagMax.toFixed(0)} ms)`);

    // Memory: back within 50 MiB of before, polled with a bound (no collection can be forced).
    const rss = await until(
      'the resident memory back within 50 MiB',
      () => {
        const now = rssOf(pid);
        return now - rssBefore <= 50 * MiB && now;
      },
      30_000,
    ).catch(() => rssOf(pid)); // the assertion below says how far off it stayed
    t.comment(`RSS before ${(rssBefore / MiB).toFixed(0)} MiB, after ${(rss / MiB).toFixed(0)} MiB`);
    t.ok(rss - rssBefore <= 50 * MiB, `RSS ${(rss / MiB).toFixed(0)} MiB within 50 MiB of ${(rssBefore / MiB).toFixed(0)} MiB`);
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  });
