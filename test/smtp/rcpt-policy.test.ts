// The RCPT TO policy for custom domains (docs/receiving.md, "Policy at RCPT TO"): Postern receives
// for a custom domain only once its MX is confirmed, and never for a failed or deleted one;
// everything else gets `550 5.7.1 <rcpt>: relay access denied` over real SMTP. A claimed domain
// walks through its states here (nothing published, DKIM only, MX published) with the same
// SMTP session questions asked at each step.
import t from 'tap';
import { testDatabases } from '../helpers/databases.js';
import { createAddress, RawSmtp, sendRaw, setup, simpleMail, type InboundEnv } from '../helpers/inbound.js';

const DAY = 24 * 3600_000;
const MX_HERE = { type: 'MX' as const, data: { preference: 10, exchange: 'mx.postern.test' } };
const denied = (rcpt: string) => `550 5.7.1 <${rcpt}>: relay access denied`;

/** The reply to RCPT TO:<rcpt> in a fresh SMTP session. */
async function rcptReply(env: InboundEnv, rcpt: string): Promise<string> {
  const c = await RawSmtp.connect(env.d.smtpPort);
  try {
    if (!(await c.cmd('EHLO client.example.org')).startsWith('250')) throw new Error('EHLO refused');
    if (!(await c.cmd('MAIL FROM:<alice@sender.example>')).startsWith('250')) throw new Error('MAIL refused');
    return await c.cmd(`RCPT TO:<${rcpt}>`);
  } finally {
    c.close();
  }
}

for (const db of testDatabases()) {
  t.test(`RCPT TO at custom domains on ${db}`, async (t) => {
    const env = await setup(t, { db, plan: 'pro' });
    const { d, dns } = env;
    const inbound = (method: string, p: string, body?: unknown) => d.request(method, `/v1/inbound${p}`, { key: env.ws.live, body });
    const claim = async (domain: string): Promise<string> => {
      const r = await inbound('POST', '/domains', { domain });
      if (r.status !== 201) throw new Error(`claim failed: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.id as string;
    };

    t.test('pending, nothing published: refused, and accepted once the MX is confirmed', async (t) => {
      const id = await claim('pending.example');
      t.match((await inbound('GET', `/domains/${id}`)).body, { status: 'pending', receiving: { verified: false } });
      for (const rcpt of ['sales@pending.example', 'postmaster@pending.example', 'anything+tag@PENDING.example']) {
        t.equal(await rcptReply(env, rcpt), denied(rcpt), rcpt);
      }

      dns.set('pending.example', [MX_HERE]);
      t.match((await inbound('GET', `/domains/${id}`)).body, { receiving: { verified: true } }, 'the MX is confirmed');
      const addr = await createAddress(env, { localPart: 'sales', domainId: id });
      t.equal(addr.address, 'sales@pending.example');
      t.match(await rcptReply(env, 'sales@pending.example'), /^250 /, 'the same domain now receives');
      const reply = await sendRaw(
        d.smtpPort,
        { from: 'alice@sender.example', to: ['sales@pending.example'] },
        simpleMail({ to: 'sales@pending.example', subject: 'after verification' }),
      );
      t.match(reply, /^250 2\.0\.0 Ok: stored as rcv_/);
      const list = await d.request('GET', '/v1/inbound/messages', { key: env.ws.live });
      t.match(list.body.messages, [{ subject: 'after verification', status: 'received' }]);
    });

    t.test('pending with only its DKIM record confirmed (sends, does not receive): refused', async (t) => {
      const id = await claim('dkimonly.example');
      const dkim = (await inbound('GET', `/domains/${id}`)).body.records.find((r: { check: string }) => r.check === 'dkim');
      dns.set(dkim.name, [{ type: 'TXT', data: dkim.value }]);
      t.match((await inbound('GET', `/domains/${id}`)).body, {
        status: 'pending',
        sending: { verified: true },
        receiving: { verified: false },
      });
      t.equal(await rcptReply(env, 'sales@dkimonly.example'), denied('sales@dkimonly.example'));
    });

    t.test('failed (nothing confirmed in 7 days): refused, even once its MX points here', async (t) => {
      const id = await claim('late.example');
      d.clock.advance(8 * DAY);
      t.equal(await d.app.domains.expireClaims(), 1);
      t.equal(await rcptReply(env, 'sales@late.example'), denied('sales@late.example'));
      dns.set('late.example', [MX_HERE]);
      t.match(
        (await inbound('GET', `/domains/${id}`)).body,
        { status: 'failed', receiving: { verified: false } },
        'a failed claim is not revived',
      );
      t.equal(await rcptReply(env, 'sales@late.example'), denied('sales@late.example'));
    });

    t.test('failed although its MX confirmation landed: refused', async (t) => {
      // The state a check racing the expiry leaves: it read the claim as pending, the expiry marked
      // it failed, then the check's MX confirmation landed (that write has no status guard).
      const id = await claim('raced.example');
      await d.app.db
        .updateTable('domains')
        .set({ status: 'failed', mx_verified_at: d.clock.now().toISOString() })
        .where('id', '=', id)
        .execute();
      t.equal(await rcptReply(env, 'sales@raced.example'), denied('sales@raced.example'));
    });
  });
}
