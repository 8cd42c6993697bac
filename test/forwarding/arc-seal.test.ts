// The ARC seal of a forward carries the forward's own time (the injected clock), and dkimpy
// verifies it. mailauth, left to itself, reads the wall clock once to sign the
// ARC-Message-Signature and again to write it: when a second turned between the two, the t= it
// wrote was not the one it signed, and about one forward in five hundred left with an ARC set
// that no receiver could verify.
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { composeForward } from '../../src/forwarding/compose.js';
import { startWireChecker } from '../helpers/wire-check.js';

t.test('the seal is dated by the clock it is given, and verifies', async (t) => {
  const checker = startWireChecker(t);
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  checker.publish('arc._domainkey.mx.postern.test', `v=DKIM1; k=rsa; p=${publicKey.replace(/-----[^-]+-----|\s/g, '')}`);
  // In the past: dkimpy refuses a signature dated in the future.
  const date = new Date('2026-01-02T03:04:05Z');
  const original = Buffer.from(
    'Authentication-Results: mx.postern.test; spf=pass smtp.mailfrom=ann@sender.example\r\n' +
      'From: Ann <ann@sender.example>\r\nTo: fwd@acme.in.postern.test\r\nSubject: Forward me\r\n' +
      'Date: Fri, 02 Jan 2026 03:00:00 +0000\r\nMessage-ID: <1@sender.example>\r\nMIME-Version: 1.0\r\n' +
      'Content-Type: text/plain; charset=utf-8\r\n\r\nHello.\r\n',
  );
  const raw = await composeForward({
    raw: original,
    receivedId: 'rcv_1',
    messageId: 'msg_1',
    to: 'dest@example.net',
    hostname: 'mx.postern.test',
    date,
    arc: { domain: 'mx.postern.test', selector: 'arc', key: { privateKey } as never, cv: 'none' },
  });
  const head = raw.toString('latin1', 0, raw.indexOf('\r\n\r\n'));
  const stamp = Math.round(date.getTime() / 1000);
  t.match(head, new RegExp(`^ARC-Seal: [^]*?t=${stamp};`), 'ARC-Seal t= is the forward’s time');
  t.match(head, new RegExp(`ARC-Message-Signature: [^]*?t=${stamp};`), 'ARC-Message-Signature t= is the forward’s time');
  t.same((await checker.facts(raw)).arc, { result: 'pass', comment: 'success' }, 'dkimpy verifies the ARC set');
});
