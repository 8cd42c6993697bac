// Postern's DKIM signer against two implementations it did not write, over generated messages:
// dkimpy (test/helpers/wire_check.py) must verify every signature, and mailauth's signer must
// compute the same body hash. The shapes are the corners of relaxed canonicalization: blanks and
// tabs inside and at the end of lines, lines made only of blanks, empty lines at the end, an empty
// body, folded and repeated header fields, 8-bit bytes.
import { generateKeyPairSync } from 'node:crypto';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import t from 'tap';
import { hasBlanksToRewrite, relaxedBody, signMessage } from '../../../src/channels/email/dkim.js';
import { holds } from '../../helpers/property.js';
import { startWireChecker } from '../../helpers/wire-check.js';

const { dkimSign } = createRequire(import.meta.url)('mailauth/lib/dkim/sign.js') as {
  dkimSign(raw: Buffer, opts: object): Promise<{ signatures: string }>;
};

const { privateKey, publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});
const key = { domain: 'acme.example', selector: 'postern', privateKey };
const txt = `v=DKIM1; k=rsa; p=${publicKey.replace(/-----[^-]+-----|\s/g, '')}`;

const piece = fc.constantFrom('a', 'word', ' ', '  ', '\t', ' \t ', 'é', '\u00a0', '.', ':', ';', '=', 'x'.repeat(80));
const text = fc.array(piece, { maxLength: 12 }).map((p) => p.join(''));
const line = fc.oneof(text, fc.constantFrom('', ' ', '\t', '  \t'));
// A body ends with CRLF, or is empty: on the wire a message always ends with a line break (the
// composer adds one), and where it would not, the readings differ (dkimpy keeps blanks at the end
// of a last line that has no CRLF).
const bodyArb = fc
  .record({ lines: fc.array(line, { maxLength: 8 }), end: fc.constantFrom('\r\n', '\r\n\r\n', ' \r\n', '\r\n \r\n  \r\n') })
  .map(({ lines, end }) => (lines.length ? lines.join('\r\n') + end : ''));
const fieldArb = fc
  .record({
    name: fc.constantFrom('From', 'To', 'Subject', 'Date', 'Message-ID', 'Cc', 'X-Other', 'subject', 'MIME-Version'),
    value: text,
    fold: fc.constantFrom('', '\r\n ', '\r\n\t', ' \r\n  '),
    more: text,
    // (Not a blank before the colon: obsolete syntax, which verifiers select differently.)
    gap: fc.constantFrom(': ', ':', ':\t', ':  '),
  })
  .map(({ name, value, fold, more, gap }) => `${name}${gap}${value}${fold && more ? `${fold}${more}` : ''}`);
const messageArb = fc
  .record({ fields: fc.array(fieldArb, { minLength: 1, maxLength: 8 }), body: bodyArb })
  .map(({ fields, body }) => Buffer.from(`From: a@acme.example\r\n${fields.join('\r\n')}\r\n\r\n${body}`, 'latin1'));

t.test('dkimpy verifies every signature, and mailauth hashes every body the same', async (t) => {
  const checker = startWireChecker(t);
  checker.publish('postern._domainkey.acme.example', txt);
  await holds(
    t,
    'dkimpy verifies, mailauth agrees',
    fc.asyncProperty(messageArb, async (raw) => {
      const signed = signMessage(raw, key);
      const [facts] = (await checker.facts(signed)).dkim;
      if (!facts?.verified) throw new Error(`dkimpy: ${facts?.error ?? 'no signature'}`);
      const theirs = await dkimSign(raw, {
        canonicalization: 'relaxed/relaxed',
        algorithm: 'rsa-sha256',
        signTime: new Date(0),
        signatureData: [{ signingDomain: 'acme.example', selector: 'postern', privateKey }],
      });
      const bh = (s: string) => /bh=([^;]+);/.exec(s.replace(/\r\n[ \t]/g, ''))?.[1];
      if (bh(signed.toString('latin1')) !== bh(theirs.signatures))
        throw new Error(`body hash ${bh(signed.toString('latin1'))}, mailauth's ${bh(theirs.signatures)}`);
    }),
    400,
  );
});

t.test('dual signing (RFC 8463): dkimpy verifies both the RSA and the Ed25519 signature', async (t) => {
  const ed = generateKeyPairSync('ed25519', {
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'der' },
  });
  const checker = startWireChecker(t);
  checker.publish('postern._domainkey.acme.example', txt);
  checker.publish('postern-ed._domainkey.acme.example', `v=DKIM1; k=ed25519; p=${ed.publicKey.subarray(12).toString('base64')}`);
  const dual = { ...key, ed25519: { selector: 'postern-ed', privateKey: ed.privateKey } };
  await holds(
    t,
    'dkimpy verifies both signatures',
    fc.asyncProperty(messageArb, async (raw) => {
      const facts = (await checker.facts(signMessage(raw, dual))).dkim;
      const by = (a: string) => facts.find((f) => f.a === a);
      for (const a of ['rsa-sha256', 'ed25519-sha256'])
        if (!by(a)?.verified) throw new Error(`dkimpy, ${a}: ${by(a)?.error ?? 'no signature'}`);
      if (facts.length !== 2) throw new Error(`${facts.length} signatures`);
    }),
    100,
  );
});

t.test('a last line of blanks is an empty line, and empty lines at the end are dropped', async (t) => {
  // nodemailer's signer hashed `1\r\n\r\n` for this body, so no receiver could verify it.
  t.equal(relaxedBody(Buffer.from('1\r\n \r\n')).toString(), '1\r\n');
  t.equal(relaxedBody(Buffer.from('a \t b\t\r\n\r\n\r\n')).toString(), 'a b\r\n');
  t.equal(relaxedBody(Buffer.from('')).toString(), '');
  t.equal(relaxedBody(Buffer.from('\r\n\r\n')).toString(), '');
  t.equal(relaxedBody(Buffer.from('no line end')).toString(), 'no line end\r\n');
});

t.test('hasBlanksToRewrite says what the regular expression it replaced says', async (t) => {
  const oracle = /[ \t](?:\r\n|$)|\t| {2}/;
  await holds(
    t,
    'the same answer for generated text of blanks and line ends',
    fc.property(fc.array(fc.constantFrom(' ', '\t', '\r', '\n', '\r\n', 'a', '\u00a0'), { maxLength: 12 }), (parts) => {
      const s = parts.join('');
      if (hasBlanksToRewrite(s) !== oracle.test(s)) throw new Error(`differs for ${JSON.stringify(s)}`);
    }),
    2000,
  );
});
