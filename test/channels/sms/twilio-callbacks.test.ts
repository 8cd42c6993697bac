// Twilio status callbacks through the whole daemon only move a message forward: Twilio posts one
// callback per status change and does not promise their order, so a late `sent` (or `queued`,
// `sending`) after `delivered` must change nothing, and a repeated `delivered` must not record a
// second event. Every callback here is signed with the connection's auth token (X-Twilio-Signature),
// so each is one the daemon accepts (204): only the transition table decides.
import t, { type Test } from 'tap';
import { twilioSignature } from '../../../src/channels/sms/twilio.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startHttpFake } from '../../helpers/provider-fakes.js';

const AUTH_TOKEN = 'twilio-auth-token-forward-only-3c1d';

for (const db of testDatabases()) {
  t.test(`twilio callbacks only move a message forward on ${db}`, async (t) => {
    // The Twilio fake listens on loopback: the channels' SSRF guard admits it through the allow list.
    const d = await bootDaemon(t, { db, env: { POSTERN_CHANNELS_ALLOW_LIST: '127.0.0.1' } });
    const acme = await d.workspace('acme');
    let n = 0;
    const twilio = await startHttpFake(t, () => ({ status: 201, body: { sid: `SM${++n}`, status: 'queued' } }));
    const added = await d.cli(
      ...['connection', 'add', '--workspace', 'acme', '--env', 'live', '--channel', 'sms', '--provider', 'twilio'],
      ...['--account-sid', 'AC123', '--auth-token', AUTH_TOKEN, '--from', '+15005550006', '--base-url', twilio.url],
    );
    t.equal(added.code, 0, added.stderr);
    const url = `${d.url}/callbacks/twilio/${added.json.id}`;
    const callback = (sid: string, status: string, extra: Record<string, string> = {}) => {
      const params = { MessageSid: sid, MessageStatus: status, AccountSid: 'AC123', To: '+14155550100', ...extra };
      return fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(AUTH_TOKEN, url, params) },
        body: new URLSearchParams(params),
      });
    };
    const send = async (t: Test) => {
      const r = await d.request('POST', '/v1/send-raw', {
        key: acme.live,
        body: { channel: 'sms', to: '+14155550100', content: { body: 'Your code is 123456' } },
      });
      t.equal(r.status, 202, JSON.stringify(r.body));
      await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
      const m = await get(r.body.id);
      t.match(m, { status: 'sent', provider: 'twilio', providerMessageId: /^SM\d+$/ });
      return m as { publicId: string; providerMessageId: string };
    };
    const get = async (id: string) => (await d.request('GET', `/v1/messages/${id}`, { key: acme.live })).body;
    const events = async (publicId: string) =>
      (await d.app.db.selectFrom('events').select(['type', 'data']).where('workspace_id', '=', acme.id).execute())
        .filter((e) => JSON.parse(e.data).publicId === publicId)
        .map((e) => e.type);
    const callbackNotes = (m: { timeline: { e: string }[] }) => m.timeline.map((e) => e.e).filter((e) => e.startsWith('twilio callback'));

    t.test('sent, queued or sending after delivered leave it delivered; a repeated delivered is not a second event', async (t) => {
      const m = await send(t);
      t.equal((await callback(m.providerMessageId, 'delivered')).status, 204);
      t.equal((await get(m.publicId)).status, 'delivered');
      for (const late of ['delivered', 'sending', 'queued', 'sent']) t.equal((await callback(m.providerMessageId, late)).status, 204, late);
      const after = await get(m.publicId);
      t.equal(after.status, 'delivered', 'still delivered after the late callbacks');
      t.same(callbackNotes(after), ['twilio callback: delivered'], 'one callback entry on the timeline');
      t.same(
        (await events(m.publicId)).filter((e) => e === 'message.delivered'),
        ['message.delivered'],
        'one message.delivered event',
      );
    });

    t.test('a sent callback while sent changes nothing; then delivered moves it on', async (t) => {
      const m = await send(t);
      t.equal((await callback(m.providerMessageId, 'sent')).status, 204);
      const same = await get(m.publicId);
      t.equal(same.status, 'sent');
      t.same(callbackNotes(same), [], 'a callback repeating the current status writes nothing');
      t.equal((await callback(m.providerMessageId, 'delivered')).status, 204);
      t.equal((await get(m.publicId)).status, 'delivered');
    });

    t.test('failed after delivered is final: a late delivered or sent does not revive it', async (t) => {
      const m = await send(t);
      t.equal((await callback(m.providerMessageId, 'delivered')).status, 204);
      t.equal((await callback(m.providerMessageId, 'undelivered', { ErrorCode: '30006' })).status, 204);
      t.match(await get(m.publicId), { status: 'failed', error: 'twilio: undelivered (error 30006)' });
      t.equal((await callback(m.providerMessageId, 'delivered')).status, 204);
      t.equal((await callback(m.providerMessageId, 'sent')).status, 204);
      const after = await get(m.publicId);
      t.match(after, { status: 'failed', error: 'twilio: undelivered (error 30006)' });
      t.same(callbackNotes(after), ['twilio callback: delivered', 'twilio callback: failed']);
    });
  });
}
