// The metrics listener end to end: real traffic through the daemon (API sends delivered to a
// loopback MX, deferred by it, bounced and complained about over SMTP; test-mode outcomes; inbound
// mail accepted and refused; webhook deliveries), one scrape before and one after, and exact
// deltas. promtool checks the exposition; the Grafana dashboard uses only series the scrape has.
// On SQLite and PostgreSQL; two nodes on one database count per node and report the same queue.
// Also: the bearer token, metrics.enabled=false (nothing listens), and /readyz naming the listener.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases, type TestDb } from '../helpers/databases.js';
import { sendRaw, simpleMail } from '../helpers/inbound.js';
import { promtoolCheck, scrape, total, type Sample } from '../helpers/metrics.js';
import { buildArf, buildDsn } from '../helpers/reports.js';
import { startRemoteMx } from '../helpers/smtp-sink.js';
import { startReceiver } from '../helpers/webhook-receiver.js';
import { tick as webhookTick } from '../helpers/webhooks.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

for (const db of testDatabases()) counted(db);

for (const db of testDatabases()) {
  t.test(`two nodes on one ${db} database: counters per node, queue gauges cluster wide`, async (t) => {
    const a = await bootDaemon(t, { db });
    const b = await bootDaemon(t, db === 'postgres' ? { databaseUrl: a.env.POSTERN_DATABASE_URL } : { dataDir: a.dataDir });
    const ws = await a.workspace('acme');
    const scrapeBoth = async () => [(await scrape(a.metricsPort!)).samples, (await scrape(b.metricsPort!)).samples];
    const [a0, b0] = await scrapeBoth();
    // Accepted by node a's API; deferred on the first attempt by whichever node's dispatcher claims each.
    for (let i = 0; i < 3; i++) {
      const r = await a.request('POST', '/v1/send-raw', {
        key: ws.test,
        body: { to: `deferred+${i}@example.com`, channel: 'email', content: { subject: 'Hi', text: 'Hello' } },
      });
      t.equal(r.status, 202);
    }
    for (const d of [a, b]) await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    const [a1, b1] = await scrapeBoth();
    const delta = (after: Sample[], before: Sample[], event: string) =>
      total(after, 'postern_messages_total', { event }) - total(before, 'postern_messages_total', { event });
    t.equal(delta(a1, a0, 'accepted'), 3, 'node a accepted them');
    t.equal(delta(b1, b0, 'accepted'), 0, 'node b did not');
    t.equal(delta(a1, a0, 'deferred') + delta(b1, b0, 'deferred'), 3, 'summed over nodes: each deferral once');
    for (const [node, s] of [
      ['a', a1],
      ['b', b1],
    ] as const) {
      t.equal(total(s, 'postern_queue_messages', { status: 'dispatched', scope: 'cluster' }), 3, `node ${node} reports the whole queue`);
    }
  });
}

t.test('a bearer token guards the scrape', async (t) => {
  const d = await bootDaemon(t, { env: { POSTERN_METRICS_TOKEN: 's3cret-metrics' } });
  const url = `http://127.0.0.1:${d.metricsPort}/metrics`;
  const none = await fetch(url);
  t.equal(none.status, 401);
  t.match(await none.json(), { error: { code: 'unauthorized', message: /Bearer/ } });
  t.equal((await fetch(url, { headers: { authorization: 'Bearer wrong' } })).status, 401);
  t.equal((await fetch(url, { headers: { authorization: 'Bearer s3cret-metrics' } })).status, 200);
  t.ok((await scrape(d.metricsPort!, 's3cret-metrics')).samples.length > 0);
  // Only /metrics, only GET: other paths and methods answer in the error envelope.
  t.match(await (await fetch(`http://127.0.0.1:${d.metricsPort}/other`)).json(), { error: { code: 'not_found' } });
  t.equal((await fetch(url, { method: 'POST' })).status, 405);
  // The API listener does not serve metrics.
  t.equal((await d.request('GET', '/metrics')).status, 404);
  const ready = await d.request('GET', '/readyz');
  t.match(ready.body, { ready: true, checks: { metrics: true } });
});

t.test('metrics.enabled=false: nothing listens, the daemon serves as before', async (t) => {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const d = await bootDaemon(t, { env: { POSTERN_METRICS_ENABLED: 'false', POSTERN_METRICS_PORT: String(port) } });
  t.equal(d.metricsPort, null);
  await t.rejects(fetch(`http://127.0.0.1:${port}/metrics`), 'connection refused: nothing listens on metrics.port');
  const ready = await d.request('GET', '/readyz');
  t.equal(ready.status, 200);
  t.notOk('metrics' in ready.body.checks);
});

async function webhookReceiver(t: { teardown(fn: () => unknown): void }, status: number) {
  const rx = await startReceiver(() => status);
  t.teardown(() => rx.close());
  return rx;
}

/** The counter test on one database. */
function counted(db: TestDb): void {
  t.test(`on ${db}: counters move by exactly the traffic sent; promtool passes; the dashboard uses only exposed series`, async (t) => {
    let rcptRule: (a: string) => { code: number; message: string } | undefined = () => undefined;
    const { sink, env } = await startRemoteMx(t, { rcpt: (a) => rcptRule(a) });
    // One named destination domain: example.net (sent to first) keeps its name, example.com is `other`.
    const d = await bootDaemon(t, { db, env: { ...env, POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true', POSTERN_METRICS_TOP_DOMAINS: '1' } });
    t.ok(d.metricsPort, 'the metrics listener is up on a port of its own');
    t.not(d.metricsPort, d.httpPort);
    const ws = await d.workspace('acme', { plan: 'pro' });
    const dispatch = () => d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    const send = (to: string, key = ws.live) =>
      d.request('POST', '/v1/send-raw', { key, body: { to, channel: 'email', content: { subject: 'Hi', text: 'Hello' } } });
    const ok = await webhookReceiver(t, 200);
    const failing = await webhookReceiver(t, 500);
    for (const rx of [ok, failing]) {
      const r = await d.request('POST', '/v1/webhooks', { key: ws.live, body: { url: rx.url, events: ['message.received'] } });
      t.equal(r.status, 201);
    }
    const created = await d.request('POST', '/v1/inbound/addresses', { key: ws.live, body: { localPart: 'support' } });
    t.equal(created.status, 201);
    const address: { address: string } = created.body;

    const before = (await scrape(d.metricsPort!)).samples;

    // Live email: two delivered, one greylisted (deferred); then a DSN bounces one, an ARF complains about the other.
    const alice = await send('alice@example.net');
    const bob = await send('bob@example.net');
    await dispatch();
    rcptRule = () => ({ code: 451, message: '4.7.1 greylisted' });
    await send('grey@example.net');
    await dispatch();
    rcptRule = () => undefined;
    const returnPath = (id: string) => sink.received.find((m) => m.from.startsWith(`bounces+${id}@`))!;
    const dsn = await buildDsn(returnPath(alice.body.id).from, [
      { recipient: 'alice@example.net', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 user unknown' },
    ]);
    t.match(await sendRaw(d.smtpPort, { from: '', to: [returnPath(alice.body.id).from] }, dsn), /^250 /);
    const bobMail = returnPath(bob.body.id);
    const arf = await buildArf(bobMail.from, 'bob@example.net', bobMail.raw.toString('latin1'));
    t.match(await sendRaw(d.smtpPort, { from: 'fbl@mailbox.example.net', to: [bobMail.from] }, arf), /^250 /);

    // Test mode: one of each simulated outcome, and a plain delivery.
    for (const to of ['failed', 'suppressed', 'opted_out', 'sent', 'blocked', 'plain'])
      t.equal((await send(`${to}@example.com`, ws.test)).status, 202);
    await dispatch();

    // Inbound: one message stored (its webhook deliveries: one succeeds, one will be retried), one recipient refused.
    t.match(await sendRaw(d.smtpPort, { from: 'x@sender.example', to: [address.address] }, simpleMail({ to: address.address })), /^250 /);
    await t.rejects(sendRaw(d.smtpPort, { from: 'x@sender.example', to: ['someone@elsewhere.example'] }, simpleMail({ to: 'x@y.z' })));
    await webhookTick(d);
    t.equal((await d.request('GET', '/no/such/route')).status, 404);

    const after = (await scrape(d.metricsPort!)).samples;
    const delta = (name: string, labels: Record<string, string> = {}) => total(after, name, labels) - total(before, name, labels);
    const messages = (event: string, labels: Record<string, string>) =>
      delta('postern_messages_total', { event, channel: 'email', ...labels });
    const live = { environment: 'live', domain: 'example.net' };
    const test = { environment: 'test', domain: 'other' };

    t.same(
      Object.fromEntries(['accepted', 'delivered', 'deferred', 'failed', 'bounced', 'complained'].map((e) => [e, messages(e, live)])),
      { accepted: 3, delivered: 2, deferred: 1, failed: 1, bounced: 1, complained: 1 },
      'live email to example.net',
    );
    t.same(
      Object.fromEntries(
        ['accepted', 'delivered', 'sent', 'failed', 'suppressed', 'opted_out', 'blocked', 'deferred'].map((e) => [e, messages(e, test)]),
      ),
      { accepted: 6, delivered: 1, sent: 1, failed: 1, suppressed: 1, opted_out: 1, blocked: 1, deferred: 0 },
      'test-mode email: its domain beyond the top 1 reads other',
    );
    t.equal(delta('postern_messages_total', { domain: 'example.com' }), 0, 'no series for a domain beyond the top N');

    t.equal(delta('postern_delivery_attempt_duration_seconds_count', { channel: 'email', result: 'deferred' }), 1, 'one deferred attempt');
    t.equal(delta('postern_email_tls_total'), 2, 'TLS outcome of each recipient the MX accepted');
    t.equal(delta('postern_email_tls_total', { result: 'plaintext', policy: 'none' }), 2, 'the sink offers no STARTTLS');
    t.equal(
      delta('postern_delivery_failures_total', { category: 'greylisted', outcome: 'deferred' }),
      1,
      'the greylisting, by its category',
    );
    t.equal(delta('postern_delivery_failures_total'), 1, 'and no other refusal');
    t.equal(delta('postern_http_requests_total', { method: 'POST', route: '/v1/send-raw', status: '202' }), 9);
    t.equal(delta('postern_http_request_duration_seconds_count', { method: 'POST', route: '/v1/send-raw' }), 9);
    t.equal(delta('postern_http_requests_total', { route: 'unmatched', status: '404' }), 1, 'an unknown path is `unmatched`, not its text');
    t.notOk(
      after.some((s) => s.name === 'postern_http_requests_total' && /no\/such/.test(s.labels.route)),
      'no raw path as a label',
    );
    t.equal(delta('postern_smtp_sessions_total'), 4);
    t.equal(delta('postern_inbound_accepted_total'), 3, 'the DSN, the complaint and the message');
    t.equal(delta('postern_inbound_rejected_total', { reason: 'relay-denied' }), 1);
    for (const check of ['spf', 'dkim', 'dmarc', 'arc']) t.equal(delta('postern_inbound_verification_total', { check }), 1, check);
    t.equal(delta('postern_webhook_deliveries_total', { outcome: 'succeeded' }), 1);
    t.equal(delta('postern_webhook_deliveries_total', { outcome: 'retrying' }), 1);
    t.equal(delta('postern_webhook_delivery_duration_seconds_count'), 2);
    t.ok(delta('postern_db_commit_duration_seconds_count', { batcher: 'writes' }) > 0, 'group commits timed');
    t.ok(delta('postern_db_commit_duration_seconds_count', { batcher: 'inbound' }) > 0, 'inbound stores timed');

    // The greylisted message waits for its retry: queue depth from the database, cluster scoped.
    const gauge = (s: Sample[], name: string, labels: Record<string, string>) => total(s, name, { scope: 'cluster', ...labels });
    t.equal(gauge(after, 'postern_queue_messages', { status: 'dispatched' }), 1);
    t.equal(gauge(after, 'postern_queue_messages', { status: 'queued' }), 0);
    t.equal(gauge(after, 'postern_queue_oldest_ready_age_seconds', {}), 0, 'nothing due yet');
    d.clock.advance(10 * 60_000);
    const later = (await scrape(d.metricsPort!)).samples;
    const waiting = await d.app.db
      .selectFrom('messages')
      .select(['id', 'due_at'])
      .where('status', '=', 'dispatched')
      .executeTakeFirstOrThrow();
    const overdue = (d.clock.now().getTime() - new Date(waiting.due_at!).getTime()) / 1000;
    t.ok(overdue > 0);
    t.equal(gauge(later, 'postern_queue_oldest_ready_age_seconds', {}), overdue, `the retry is overdue by ${overdue}s`);
    // A dispatcher holding it (a live lease) is working on it: not waiting, so not counted.
    const leaseUntil = new Date(d.clock.now().getTime() + 60_000).toISOString();
    await d.app.db
      .updateTable('messages')
      .set({ locked_until: leaseUntil, locked_by: 'another-node' })
      .where('id', '=', waiting.id)
      .execute();
    t.equal(gauge((await scrape(d.metricsPort!)).samples, 'postern_queue_oldest_ready_age_seconds', {}), 0, 'leased: not waiting');

    // Node's default process metrics are there too.
    for (const name of ['nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes', 'process_cpu_user_seconds_total']) {
      t.ok(
        after.some((s) => s.name === name),
        name,
      );
    }

    const { text } = await scrape(d.metricsPort!);
    const check = await promtoolCheck(text);
    t.equal(check.code, 0, `promtool check metrics: ${check.output}`);
    t.equal(check.output.trim(), '', 'no lint findings');

    // Every expression of the shipped dashboard names series this scrape has.
    const exposed = new Set(later.map((s) => s.name));
    const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'contrib', 'grafana', 'postern.json'), 'utf8'));
    const exprs: string[] = dashboard.panels.flatMap((p: { targets?: { expr: string }[] }) => (p.targets ?? []).map((x) => x.expr));
    t.ok(exprs.length >= 10, `${exprs.length} panel queries`);
    for (const expr of exprs) {
      const names = [...expr.matchAll(/\b((?:postern|nodejs|process)_[a-z0-9_]+)/g)].map((m) => m[1]);
      t.ok(names.length > 0, `${expr} names a series`);
      for (const name of names) t.ok(exposed.has(name), `${name} (in ${expr}) is exposed`);
    }
  });
}
