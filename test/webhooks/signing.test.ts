// Standard Webhooks signing (webhooks/signing.ts) against the specification's published example,
// so a change to the signed content, the key derivation or the header format fails here.
import { createHmac } from 'node:crypto';
import t from 'tap';
import { generateSecret, signatureHeaders } from '../../src/webhooks/signing.js';

// The example of the Standard Webhooks reference libraries (standard-webhooks, svix).
const SPEC = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

t.test('the three headers match the specification example', async (t) => {
  t.same(signatureHeaders([SPEC.secret], SPEC.id, SPEC.timestamp, SPEC.body), {
    'webhook-id': SPEC.id,
    'webhook-timestamp': '1614265330',
    'webhook-signature': SPEC.signature,
  });
});

t.test('a secret without the whsec_ prefix is the same key', async (t) => {
  const bare = SPEC.secret.slice('whsec_'.length);
  t.equal(signatureHeaders([bare], SPEC.id, SPEC.timestamp, SPEC.body)['webhook-signature'], SPEC.signature);
});

t.test('during a rotation every secret signs, space-separated, in the order given', async (t) => {
  const other = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
  const expectedOther =
    'v1,' + createHmac('sha256', Buffer.alloc(32, 7)).update(`${SPEC.id}.${SPEC.timestamp}.${SPEC.body}`).digest('base64');
  t.equal(
    signatureHeaders([other, SPEC.secret], SPEC.id, SPEC.timestamp, SPEC.body)['webhook-signature'],
    `${expectedOther} ${SPEC.signature}`,
  );
});

t.test('each part of the signed content counts', async (t) => {
  const sig = (id: string, ts: number, body: string) => signatureHeaders([SPEC.secret], id, ts, body)['webhook-signature'];
  t.not(sig('msg_other', SPEC.timestamp, SPEC.body), SPEC.signature, 'id');
  t.not(sig(SPEC.id, SPEC.timestamp + 1, SPEC.body), SPEC.signature, 'timestamp');
  t.not(sig(SPEC.id, SPEC.timestamp, SPEC.body + ' '), SPEC.signature, 'body');
});

t.test('a new secret is whsec_ and 32 random bytes in base64', async (t) => {
  const a = generateSecret();
  const b = generateSecret();
  t.match(a, /^whsec_[A-Za-z0-9+/]{43}=$/);
  t.equal(Buffer.from(a.slice('whsec_'.length), 'base64').length, 32);
  t.not(a, b);
});
