// Bounces of forwarded mail: a DSN that a remote MTA sends, after accepting a forward, to the SRS
// envelope sender the forward went out from. Postern takes it at RCPT (the bounce domain), checks
// the SRS address, finds the forward's outbound message and fails it through the ledger, so the
// forward shows what happened. It does not relay the DSN to the original sender (docs/forwarding.md).
import t from 'tap';
import { srsForward } from '../../src/forwarding/srs.js';
import { testDatabases } from '../helpers/databases.js';
import { buildDsn } from '../helpers/reports.js';
import { startSink } from '../helpers/smtp-sink.js';
import { createAddress, sendRaw, setup, simpleMail } from '../helpers/inbound.js';

/** A DSN as Postfix sends it: the report, and the headers of the message it returns (when given). */
const dsn = (to: string, recipient: string, status: string, returned: string | null) =>
  buildDsn(to, [{ recipient, action: 'failed', status, diagnostic: `550 ${status} user unknown` }], returned);

const headersOf = (raw: Buffer) => raw.toString('latin1').split('\r\n\r\n')[0] + '\r\n';

for (const db of testDatabases()) {
  t.test(`a DSN for a forward fails the forward, and is not relayed to the original sender on ${db}`, async (t) => {
    const sink = await startSink(t);
    const env = await setup(t, { db, env: { POSTERN_DELIVERY_PORT: String(sink.port), POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms' } });
    const { d, dns } = env;
    dns.set('example.net', [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }]);
    dns.set('mx.example.net', [{ type: 'A', data: '127.0.0.1' }]);
    const run = async () => {
      await d.app.workers.find((w) => w.name === 'forwarder')!.tick();
      await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    };
    const forwardOf = async (subject: string) => {
      const rcv = (await d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages.find(
        (m: { subject: string }) => m.subject === subject,
      );
      return (await d.request('GET', `/v1/inbound/messages/${rcv.id}/forward`, { key: env.ws.live })).body;
    };
    const fwd = await createAddress(env, { localPart: 'fwd', forwardTo: 'dest@example.net' });
    const receive = async (subject: string) => {
      await sendRaw(d.smtpPort, { from: 'alice@sender.example', to: [fwd.address] }, simpleMail({ to: fwd.address, subject }));
      await run();
      return sink.received.at(-1)!;
    };

    const out = await receive('First');
    t.match(out.from, /^SRS0=.*=sender\.example=alice@bounces\.mx\.postern\.test$/);
    t.match(await forwardOf('First'), { status: 'queued', message: { status: 'delivered' } });

    // The remote MX accepted the forward, then bounced it to the SRS address, with its headers.
    const reply = await sendRaw(
      d.smtpPort,
      { from: '', to: [out.from] },
      await dsn(out.from, 'dest@example.net', '5.1.1', headersOf(out.raw)),
    );
    t.match(reply, /^250 /, 'RCPT for the SRS address at the bounce domain is accepted');
    const view = await forwardOf('First');
    t.match(view, {
      status: 'queued',
      message: {
        status: 'failed',
        error: 'bounced: dest@example.net 5.1.1 550 5.1.1 user unknown',
        metadata: { forwardOf: view.receivedId },
      },
    });
    t.ok(
      view.message.timeline.some((e: { e: string }) => /not relayed to the original sender alice@sender\.example/.test(e.e)),
      'the timeline says the DSN was recorded, not relayed',
    );
    const failed = await d.app.db.selectFrom('events').select('data').where('type', '=', 'message.failed').execute();
    t.equal(failed.length, 1, 'message.failed recorded');
    t.match((await d.request('GET', '/v1/suppressions', { key: env.ws.live })).body.data, [
      { address: 'dest@example.net', reason: 'bounce', messageId: view.message.publicId },
    ]);
    t.equal(sink.received.length, 1, 'nothing was relayed to alice@sender.example');
    const outbound = (await d.request('GET', '/v1/messages', { key: env.ws.live })).body.data;
    t.same(
      outbound.map((m: { recipient: string }) => m.recipient),
      ['dest@example.net'],
      'no message to the original sender',
    );

    t.test('a DSN without the returned headers is matched by its recipient and the original sender', async (t) => {
      await d.request('DELETE', '/v1/suppressions/dest@example.net', { key: env.ws.live });
      d.clock.advance(60_000);
      const second = await receive('Second');
      await sendRaw(d.smtpPort, { from: '', to: [second.from] }, await dsn(second.from, 'dest@example.net', '5.2.2', null));
      t.match(await forwardOf('Second'), { message: { status: 'failed', error: /^bounced: dest@example\.net 5\.2\.2/ } });
    });

    t.test('a forged or expired SRS address names no forward: dropped', async (t) => {
      const third = await receive('Third');
      const forged = third.from.replace(/^SRS0=[^=]{4}=/, 'SRS0=AAAA=');
      await sendRaw(d.smtpPort, { from: '', to: [forged] }, await dsn(forged, 'dest@example.net', '5.1.1', headersOf(third.raw)));
      const secret = (
        await d.app.db.selectFrom('forwarding_keys').select('value').where('name', '=', 'srs-secret').executeTakeFirstOrThrow()
      ).value;
      const old = srsForward(
        secret,
        'alice@sender.example',
        'bounces.mx.postern.test',
        new Date(d.clock.now().getTime() - 40 * 86_400_000),
      );
      await sendRaw(d.smtpPort, { from: '', to: [old] }, await dsn(old, 'dest@example.net', '5.1.1', headersOf(third.raw)));
      t.match(await forwardOf('Third'), { message: { status: 'delivered' } });
      t.ok(d.logs.some((l) => /names no message; dropped/.test(l)));
    });
  });
}
