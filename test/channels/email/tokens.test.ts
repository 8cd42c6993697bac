// Tracking tokens (channels/email/tracking/tokens.ts): a token verifies only with its own key, its
// own kind and a whole signature, and never throws on what a client sends; the secret behind them
// is made once per database, whoever asks first.
import { createHmac } from 'node:crypto';
import t from 'tap';
import { createTokenSigner, loadSecret } from '../../../src/channels/email/tracking/tokens.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';

t.test('what a client sends never verifies unless it is a genuine token', async (t) => {
  const s = createTokenSigner('k1');
  const tok = s.sign({ k: 'open', m: 'msg_1' });
  const [body, sig] = tok.split('.');
  t.same(s.verify(tok, 'open'), { k: 'open', m: 'msg_1' });
  const cases: [string, string][] = [
    ['a shortened signature', `${body}.${sig.slice(0, 8)}`],
    ['a longer signature', `${body}.${sig}AAAA`],
    ['no signature', `${body}.`],
    ['no body', `.${sig}`],
    ['no dot', body],
    ['empty', ''],
  ];
  for (const [what, token] of cases) t.equal(s.verify(token, 'open'), null, what);
  // Genuine signatures over payloads that are not tokens of ours.
  t.equal(s.verify(s.sign({ k: 'open' } as never), 'open'), null, 'a signed payload without a message id');
  t.equal(s.verify(s.sign({ k: 'open', m: 7 } as never), 'open'), null, 'a message id that is not a string');
  // A body that is not JSON under a genuine signature (the key leaked, say): refused, not thrown.
  const notJson = Buffer.from('{').toString('base64url');
  const mac = createHmac('sha256', 'k1').update(notJson).digest().subarray(0, 18).toString('base64url');
  t.equal(s.verify(`${notJson}.${mac}`, 'open'), null, 'a signed body that is not JSON');
});

for (const db of testDatabases()) {
  t.test(`the secret is made once and kept (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const first = await loadSecret(d.app.db, d.clock, 'test-secret');
    t.match(first, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url');
    t.equal(await loadSecret(d.app.db, d.clock, 'test-secret'), first, 'read back the same');
    const together = await Promise.all(Array.from({ length: 5 }, () => loadSecret(d.app.db, d.clock, 'raced')));
    t.equal(new Set(together).size, 1, 'callers at once agree on one secret');
    t.not(together[0], first, 'another name, another secret');
    const row = await d.app.db.selectFrom('email_secrets').selectAll().where('name', '=', 'raced').executeTakeFirstOrThrow();
    t.equal(row.created_at, d.clock.now().toISOString(), 'stamped with the application clock');
  });
}
