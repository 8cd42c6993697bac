// Bounces and complaints as they really come back: a message goes out through the real email
// transport to a loopback MX, then the test plays the remote MTA and connects to Postern's own SMTP
// listener to deliver a report to the return path the MX saw (the VERP bounce address). What each
// report does is what docs/email-delivery.md#bounces-dsns-and-complaints promises: a failed DSN
// fails the message (also after delivered) and suppresses a hard bounce; a delayed DSN is a timeline
// note; an ARF complaint suppresses with reason `complaint`; none of them is stored as received mail.
import t from 'tap';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { sendRaw } from '../../helpers/inbound.js';
import { buildArf, buildDsn } from '../../helpers/reports.js';
import { startRemoteMx } from '../../helpers/smtp-sink.js';

type Tap = Pick<typeof t, 'equal' | 'match'>;

interface Entry {
  e: string;
}

for (const db of testDatabases()) {
  t.test(`DSNs and complaints arrive over SMTP at the bounce address on ${db}`, async (t) => {
    const { sink, env } = await startRemoteMx(t);
    const d = await bootDaemon(t, { db, env });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const dispatcher = d.app.workers.find((w) => w.name === 'dispatcher')!;
    const get = async (id: string) => (await d.request('GET', `/v1/messages/${id}`, { key: ws.live })).body;
    const suppressions = async () =>
      ((await d.request('GET', '/v1/suppressions', { key: ws.live })).body.data as { address: string; reason: string; messageId: string }[])
        .map((s) => ({ address: s.address, reason: s.reason, messageId: s.messageId }))
        .sort((a, b) => a.address.localeCompare(b.address));
    const eventsOf = async (type: 'message.failed', id: string) =>
      (await d.app.db.selectFrom('events').select('data').where('type', '=', type).execute()).filter(
        (e) => (JSON.parse(e.data) as { publicId: string }).publicId === id,
      ).length;
    /** Sends through the API and the real transport; returns the message id and what the MX received. */
    const deliver = async (t: Tap, body: Record<string, unknown>) => {
      const r = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { channel: 'email', content: { subject: 'Hi', text: 'Hello' }, ...body },
      });
      t.equal(r.status, 202);
      const before = sink.received.length;
      await dispatcher.tick();
      t.equal(sink.received.length, before + 1, 'one transaction at the MX');
      const received = sink.received.at(-1)!;
      t.match(await get(r.body.id), { status: 'delivered' });
      return { id: r.body.id as string, received };
    };
    /** The remote MTA's side: a report to the return path, over SMTP with a null sender. */
    const report = (returnPath: string, raw: Buffer) => sendRaw(d.smtpPort, { from: '', to: [returnPath] }, raw);
    const headersOf = (raw: Buffer) => raw.toString('latin1').split('\r\n\r\n')[0] + '\r\n';

    t.test('a failed DSN for `to` fails the delivered message and suppresses a hard bounce', async (t) => {
      const { id, received } = await deliver(t, { to: 'alice@example.net' });
      t.equal(received.from, `bounces+${id}@bounces.mx.postern.test`, 'the return path is the VERP bounce address');
      const reply = await report(
        received.from,
        await buildDsn(
          received.from,
          [{ recipient: 'alice@example.net', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 user unknown' }],
          headersOf(received.raw),
        ),
      );
      t.match(reply, /^250 /, 'the listener takes the report');
      const m = await get(id);
      t.match(m, { status: 'failed', error: 'bounced: alice@example.net 5.1.1 550 5.1.1 user unknown' });
      t.ok(
        m.timeline.some((e: Entry) => e.e === 'bounced: alice@example.net 5.1.1 550 5.1.1 user unknown'),
        'the bounce is on the timeline',
      );
      t.equal(await eventsOf('message.failed', id), 1, 'message.failed recorded once');
      t.same(await suppressions(), [{ address: 'alice@example.net', reason: 'bounce', messageId: id }]);
      const stored = await d.app.db.selectFrom('received_messages').select('id').execute();
      t.same(stored, [], 'a report is not stored as received mail');

      // The next send to the suppressed address makes no connection.
      const before = sink.connections();
      const again = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { to: 'alice@example.net', channel: 'email', content: { subject: 'Hi', text: 'Hello' } },
      });
      await dispatcher.tick();
      t.match(await get(again.body.id), { status: 'suppressed' });
      t.equal(sink.connections(), before, 'no connection for a suppressed address');
    });

    t.test('a delayed DSN is a timeline note; the message stays delivered and nothing is suppressed', async (t) => {
      const { id, received } = await deliver(t, { to: 'bob@example.net' });
      const reply = await report(
        received.from,
        await buildDsn(received.from, [
          { recipient: 'bob@example.net', action: 'delayed', status: '4.4.1', diagnostic: '421 4.4.1 connection timed out' },
        ]),
      );
      t.match(reply, /^250 /);
      const m = await get(id);
      t.equal(m.status, 'delivered', 'a delay does not fail the message');
      t.equal(m.error, null);
      t.ok(
        m.timeline.some((e: Entry) => e.e === 'delayed: bob@example.net 4.4.1 421 4.4.1 connection timed out'),
        'the delay is on the timeline',
      );
      t.equal(await eventsOf('message.failed', id), 0);
      t.notOk(
        (await suppressions()).some((s) => s.address === 'bob@example.net'),
        'a delay suppresses nobody',
      );

      // Later the remote MTA gives up with a soft status (mailbox full): failed, still not suppressed.
      await report(
        received.from,
        await buildDsn(received.from, [
          { recipient: 'bob@example.net', action: 'failed', status: '5.2.2', diagnostic: '552 5.2.2 mailbox full' },
        ]),
      );
      t.match(await get(id), { status: 'failed', error: 'bounced: bob@example.net 5.2.2 552 5.2.2 mailbox full' });
      t.notOk(
        (await suppressions()).some((s) => s.address === 'bob@example.net'),
        '5.2.2 is not a hard bounce',
      );
    });

    t.test('a failed DSN for a cc recipient is a note: the message follows `to`; the cc is suppressed', async (t) => {
      const { id, received } = await deliver(t, { to: 'dan@example.net', cc: ['erin@example.net'] });
      t.same(received.to.sort(), ['dan@example.net', 'erin@example.net']);
      await report(
        received.from,
        await buildDsn(received.from, [
          { recipient: 'erin@example.net', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 no such user' },
        ]),
      );
      const m = await get(id);
      t.equal(m.status, 'delivered');
      t.ok(m.timeline.some((e: Entry) => e.e === 'bounced: erin@example.net 5.1.1 550 5.1.1 no such user'));
      t.equal(await eventsOf('message.failed', id), 0);
      t.match(
        (await suppressions()).find((s) => s.address === 'erin@example.net'),
        { reason: 'bounce', messageId: id },
      );
    });

    t.test('an ARF complaint suppresses the recipient with reason complaint and notes it', async (t) => {
      const { id, received } = await deliver(t, { to: 'carol@example.net' });
      const reply = await report(received.from, await buildArf(received.from, 'carol@example.net', received.raw.toString('latin1')));
      t.match(reply, /^250 /);
      const m = await get(id);
      t.equal(m.status, 'delivered', 'a complaint does not change the status');
      t.ok(m.timeline.some((e: Entry) => e.e === 'complaint: the recipient reported this message as spam'));
      t.equal(await eventsOf('message.failed', id), 0);
      t.match(
        (await suppressions()).find((s) => s.address === 'carol@example.net'),
        { reason: 'complaint', messageId: id },
      );
      const next = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { to: 'carol@example.net', channel: 'email', content: { subject: 'Again', text: 'x' } },
      });
      await dispatcher.tick();
      t.match(await get(next.body.id), { status: 'suppressed' });
    });

    t.test('a report to a bounce address that names no message is taken and dropped', async (t) => {
      const unknown = 'bounces+msg_0000000000000000000000@bounces.mx.postern.test';
      const reply = await report(
        unknown,
        await buildDsn(unknown, [{ recipient: 'zed@example.net', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 unknown' }]),
      );
      t.match(reply, /^250 /);
      t.notOk(
        (await suppressions()).some((s) => s.address === 'zed@example.net'),
        'nothing suppressed',
      );
      t.same(await d.app.db.selectFrom('received_messages').select('id').execute(), []);
    });
  });
}
