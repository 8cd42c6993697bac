// The channel registry is the one list of channels: it holds a spec for every channel of the
// contract and nothing else, and no code outside a channel's folder (and the contract) names a
// channel to decide something — so adding a channel is its folder, its registry line and its words
// in src/contract/channels.ts (docs/architecture.md, "Add a channel"). Email-only features (the
// message checks, the MIME source, SMTP submission, inbound mail) may name 'email' where they
// serve email alone; they never branch between channels (`case`), and no other name may appear.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { CONNECTION_CHANNELS, PROVIDERS, SPECS, specOf } from '../../src/channels/registry.js';
import { CHANNEL_HINTS, contentSchemas, inlineContentSchemas } from '../../src/contract/channels.js';
import { CHANNELS } from '../../src/contract/channels.js';

const root = path.resolve(import.meta.dirname, '../..');

t.test('the registry lists a spec for every channel of the contract, in its order, and nothing else', async (t) => {
  t.same(
    SPECS.map((s) => s.channel),
    [...CHANNELS],
  );
  for (const c of CHANNELS) {
    t.equal(specOf(c).channel, c);
    t.ok(CHANNEL_HINTS[c] && contentSchemas[c] && inlineContentSchemas[c], `${c} has hints and content schemas in the contract`);
  }
  t.same(Object.keys(CHANNEL_HINTS), [...CHANNELS]);
  for (const p of PROVIDERS) t.ok(CONNECTION_CHANNELS.includes(p.channel), `${p.name} serves a connection channel (${p.channel})`);
  for (const c of CONNECTION_CHANNELS) {
    const live = specOf(c).live;
    t.ok(live.kind === 'connection' && live.providers.every((p) => p.channel === c), `${c}'s providers are ${c} providers`);
  }
});

t.test('what each spec decides, by channel', async (t) => {
  const sub = (endpoint: string) => JSON.stringify({ endpoint, keys: { p256dh: 'k', auth: 'a' } });
  const cases: [string, string, { issue: boolean; simulation: string | null; key?: string }][] = [
    ['email', 'someone@example.com', { issue: false, simulation: null }],
    ['email', 'Deferred+1@x.test', { issue: false, simulation: 'deferred' }],
    ['email', 'bounce@example.com', { issue: false, simulation: 'failed' }],
    ['email', 'not an address', { issue: true, simulation: null }],
    ['sms', '+15005550005', { issue: false, simulation: 'opted_out' }],
    ['sms', '+14155550100', { issue: false, simulation: null }],
    ['sms', '4155550100', { issue: true, simulation: null }],
    ['push', 'test-blocked', { issue: false, simulation: 'blocked' }],
    ['push', 'token with space', { issue: true, simulation: null }],
    ['web-push', sub('https://push.example/sent'), { issue: false, simulation: 'sent', key: 'https://push.example/sent' }],
    ['web-push', sub('http://push.example/x'), { issue: true, simulation: null, key: 'http://push.example/x' }],
    ['web-push', 'not json', { issue: true, simulation: null, key: 'not json' }],
  ];
  for (const [channel, recipient, want] of cases) {
    const spec = specOf(channel as (typeof CHANNELS)[number]);
    t.equal(spec.recipientIssue(recipient) !== null, want.issue, `${channel} ${recipient}: ${want.issue ? 'refused' : 'taken'}`);
    t.equal(spec.simulation(recipient), want.simulation, `${channel} ${recipient} simulates ${want.simulation}`);
    t.equal(spec.suppression.key(recipient), want.key ?? recipient, `${channel} ${recipient}: suppression key`);
  }
  t.equal(specOf('email').suppression.reason, 'bounce');
  t.equal(specOf('sms').suppression.reason, 'unregistered');
  t.equal(specOf('email').destination('a@Example.COM'), 'example.com');
  t.equal(specOf('push').destination('token'), null);
});

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(rel);
    else if (/\.tsx?$/.test(entry.name)) yield rel;
  }
}

// Where channel names belong: a channel's own folder, the contract's channel file, frozen migrations.
const OWN_PLACES = /^src\/channels\/[^/]+\/|^src\/contract\/channels\.ts$|^src\/db\/migrations\//;

t.test('no code outside the channel folders and the contract decides by a channel name', async (t) => {
  const others = CHANNELS.filter((c) => c !== 'email').join('|');
  const named = new RegExp(`(['"\`])(${others})\\1`);
  const branch = new RegExp(`case (['"\`])(${CHANNELS.join('|')})\\1`);
  const found: string[] = [];
  for (const file of [...sources('src'), ...sources('ui/src')]) {
    if (OWN_PLACES.test(file)) continue;
    readFileSync(path.join(root, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (named.test(line) || branch.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
      });
  }
  t.same(found, [], 'read the channel spec (channels/registry.ts) or the contract hints instead');
});
