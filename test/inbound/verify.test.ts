// DKIM verdicts as the rest of the mail world words them: a body altered after signing is
// `dkim=fail (body hash did not verify)` — what rspamd, dkimpy and OpenDKIM say, where mailauth
// says `neutral` — in the stored verdicts and in the Authentication-Results header Postern
// prepends. The key is published on the loopback DNS server; the message goes in over SMTP.
import { generateKeyPairSync } from 'node:crypto';
import nodemailer from 'nodemailer';
import t from 'tap';
import { createAddress, sendRaw, setup } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`a DKIM-signed body altered after signing is dkim=fail (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    env.dns.set('s1._domainkey.sender.example', [
      { type: 'TXT', data: `v=DKIM1; k=rsa; p=${(publicKey.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64')}` },
    ]);
    env.dns.set('sender.example', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
    const a = await createAddress(env, { localPart: 'inbox' });
    const signed = await nodemailer.createTransport({ streamTransport: true, buffer: true }).sendMail({
      from: 'Alice <alice@sender.example>',
      to: a.address,
      subject: 'Tampered',
      text: 'Pay 100 EUR to the usual account.',
      dkim: { domainName: 'sender.example', keySelector: 's1', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string },
    });
    const original = (signed.message as Buffer).toString('latin1');
    t.match(original, /Pay 100 EUR/);
    const tampered = original.replace('Pay 100 EUR', 'Pay 900 EUR');

    const deliver = async (raw: string) => {
      const reply = await sendRaw(env.d.smtpPort, { from: 'alice@sender.example', to: [a.address] }, Buffer.from(raw, 'latin1'));
      const id = /rcv_\w+/.exec(reply)![0];
      const detail = (await env.d.request('GET', `/v1/inbound/messages/${id}`, { key: env.ws.live })).body;
      const stored = await (await fetch(detail.rawUrl, { headers: { authorization: `Bearer ${env.ws.live}` } })).text();
      return { detail, authResults: /^Authentication-Results: [^\r\n]*(\r\n[ \t][^\r\n]*)*/m.exec(stored)![0] };
    };

    const bad = await deliver(tampered);
    t.equal(bad.detail.verdicts.dkim.result, 'fail');
    t.same(bad.detail.verdicts.dkim.signatures, [{ domain: 'sender.example', selector: 's1', result: 'fail' }]);
    t.match(bad.detail.verdicts.dkim.details, /body hash did not verify/);
    t.match(bad.authResults, /\r\n dkim=fail \(body hash did not verify\) header\.i=@sender\.example header\.s=s1/);
    t.notMatch(bad.authResults, /dkim=neutral/);
    t.equal(bad.detail.verdicts.spf.result, 'pass', 'the other verdicts are as mailauth gives them');

    const good = await deliver(original);
    t.equal(good.detail.verdicts.dkim.result, 'pass', 'the untouched message still passes');
    t.match(good.authResults, /\r\n dkim=pass header\.i=@sender\.example/);
  });
}
