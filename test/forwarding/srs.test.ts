// The Sender Rewriting Scheme of forwarded mail (src/forwarding/srs.ts), as plain functions: the
// address it makes, byte for byte (the hash is HMAC-SHA1 over the lowercased stamp, domain and
// local part, as postsrsd makes it; the expected value was computed with Python's hmac), what it
// leaves alone, and what it takes back.
import t from 'tap';
import { SRS_MAX_AGE_DAYS, srsForward, srsReverse } from '../../src/forwarding/srs.js';
import { sqliteOnly } from '../helpers/databases.js';

sqliteOnly('pure functions of the envelope sender; nothing stored');

const SECRET = 's3cret';
const SRS = 'bounces.postern.test';
const NOW = new Date('2026-11-28T12:00:00Z');
const DAY = 86_400_000;

t.test('a sender becomes an SRS0 address on the bounce domain', async (t) => {
  t.equal(srsForward(SECRET, 'Ann.Lee@Example.COM', SRS, NOW), 'SRS0=pU/f=JR=Example.COM=Ann.Lee@bounces.postern.test');
  t.equal(srsForward(SECRET, 'a@example.com', SRS, NOW).slice(0, 5), 'SRS0=', 'a one-letter local part');
  t.match(
    srsForward(SECRET, 'SRS0=abcd=AB=example.com=ann@other.example', SRS, NOW),
    /^SRS0=.*@bounces\.postern\.test$/,
    "another forwarder's SRS address",
  );
  t.match(srsForward(SECRET, 'xSRS0=abcd=AB=example.com=ann@bounces.postern.test', SRS, NOW), /^SRS0=.*=xSRS0=/, 'SRS only at the start');
  t.match(srsForward(SECRET, 'SRS2=abcd=AB=example.com=ann@bounces.postern.test', SRS, NOW), /^SRS0=.*=SRS2=/, 'SRS0 or SRS1 only');
});

t.test('what is kept as it is', async (t) => {
  t.equal(srsForward(SECRET, '', SRS, NOW), '', 'the null sender');
  t.equal(srsForward(SECRET, 'no-domain', SRS, NOW), 'no-domain');
  t.equal(srsForward(SECRET, '@example.com', SRS, NOW), '@example.com', 'no local part');
  for (const ours of [
    'SRS0=abcd=AB=example.com=ann@bounces.postern.test',
    'srs1=abcd=AB=example.com=ann@Bounces.Postern.Test',
    'SRS0+x@BOUNCES.POSTERN.TEST',
  ])
    t.equal(srsForward(SECRET, ours, SRS, NOW), ours, `already ours: ${ours}`);
  t.equal(
    srsForward(SECRET, 'SRS0=abcd=AB=example.com=ann@bounces.postern.test', 'Bounces.Postern.TEST', NOW),
    'SRS0=abcd=AB=example.com=ann@bounces.postern.test',
    'the bounce domain compared without case',
  );
});

t.test('an address is taken back when it is ours and fresh, and only then', async (t) => {
  const made = srsForward(SECRET, 'Ann.Lee@Example.COM', SRS, NOW);
  t.equal(srsReverse(SECRET, made, NOW), 'Ann.Lee@Example.COM');
  t.equal(srsReverse(SECRET, made.toLowerCase(), NOW), 'ann.lee@example.com', 'case folded on the way back');
  t.equal(srsReverse(SECRET, made), 'Ann.Lee@Example.COM', 'without a time, any age');
  t.equal(srsReverse('other', made, NOW), null, 'another secret');
  t.equal(srsReverse(SECRET, made.replace('pU/f', 'pU/g'), NOW), null, 'a forged hash');
  t.equal(srsReverse(SECRET, `x${made}`, NOW), null, 'text before it');
  t.equal(srsReverse(SECRET, `${made}@`, NOW), null, 'text after it');
  t.equal(srsReverse(SECRET, 'ann@example.com', NOW), null, 'not SRS');
  t.equal(
    srsReverse(SECRET, made, new Date(NOW.getTime() + SRS_MAX_AGE_DAYS * DAY)),
    'Ann.Lee@Example.COM',
    `${SRS_MAX_AGE_DAYS} days old`,
  );
  t.equal(srsReverse(SECRET, made, new Date(NOW.getTime() + (SRS_MAX_AGE_DAYS + 1) * DAY)), null, 'older: a replay');
  t.equal(srsReverse(SECRET, made, new Date(NOW.getTime() + 1024 * DAY)), 'Ann.Lee@Example.COM', 'stamps wrap every 1024 days');
});
