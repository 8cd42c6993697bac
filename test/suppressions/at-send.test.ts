// Suppressions at the point of sending (issue 34): for every suppression reason × every channel ×
// each environment, a recipient on that environment's list is held by the dispatcher before any
// transport sees it — `suppressed` (status, timeline, error, event), or for an `unsubscribe` entry
// `opted_out` on a template send and delivered on a raw one (transactional) — while the same
// recipient in the other environment goes out, because each environment has its own list
// (migration 0022). Raw sends (POST /v1/send-raw) and template sends (POST /v1/send) on every
// channel; on both databases.
//
// The entries are made as a user would where there is a way: POST /v1/suppressions for email
// (reason left out for `manual`, its default). The API and the CLI take only email addresses, so a
// phone number, a device token or a web-push endpoint is put on the list through the store that
// the dispatcher's suppress hook, the bounce handler and the CLI write through
// (`app.suppressions`), under the key the hold check reads (the endpoint for web-push).
//
// "No delivery": live messages go to capture transports registered in place of every channel's
// live one, which record each hand-over; test messages always go to the built-in test channel,
// which sets `provider: test`, so a held test message has no provider and no `dispatched` step.
import t, { type Test } from 'tap';
import { createCaptureTransport, type CaptureTransport } from '../helpers/capture-transport.js';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { CHANNELS, type Channel } from '../../src/contract/channels.js';
import { SUPPRESSION_REASONS, type SuppressionReason } from '../../src/contract/vocabulary.js';

type Env = 'live' | 'test';
type Kind = 'raw' | 'template';
type Outcome = 'suppressed' | 'opted_out' | 'delivered';

/**
 * What a send to a listed recipient becomes, per reason and kind of send (src/suppressions/store.ts).
 * A Record, so a new reason fails to compile until it is given its row here.
 */
const HELD: Record<SuppressionReason, Record<Kind, Outcome>> = {
  bounce: { raw: 'suppressed', template: 'suppressed' },
  complaint: { raw: 'suppressed', template: 'suppressed' },
  manual: { raw: 'suppressed', template: 'suppressed' },
  unsubscribe: { raw: 'delivered', template: 'opted_out' },
  unregistered: { raw: 'suppressed', template: 'suppressed' },
};

/** The event a held message's outcome records. */
const EVENT: Record<Outcome, string> = {
  suppressed: 'message.suppressed',
  opted_out: 'message.opted_out',
  delivered: 'message.delivered',
};

/** Per channel: a recipient (none of the test channel's simulating ones), the list key, content. */
const CHANNEL: Record<Channel, { to(n: number): string; key(to: string): string; content: Record<string, unknown> }> = {
  email: {
    to: (n) => `person${n}@example.com`,
    key: (to) => to,
    content: { subject: 'Hello', text: 'Hello there' },
  },
  sms: {
    to: (n) => `+1415555${String(1000 + n).padStart(4, '0')}`,
    key: (to) => to,
    content: { body: 'Hello there' },
  },
  push: {
    to: (n) => `device-token-${n}`,
    key: (to) => to,
    content: { title: 'Hello', body: 'Hello there' },
  },
  'web-push': {
    to: (n) => JSON.stringify({ endpoint: `https://push.example/subscriptions/s${n}`, keys: { p256dh: 'BPk', auth: 'x1' } }),
    key: (to) => (JSON.parse(to) as { endpoint: string }).endpoint,
    content: { title: 'Hello', body: 'Hello there' },
  },
};

const ENVS: Env[] = ['live', 'test'];
const KINDS: Kind[] = ['raw', 'template'];
const other = (env: Env): Env => (env === 'live' ? 'test' : 'live');

interface Case {
  reason: SuppressionReason;
  channel: Channel;
  /** The environment whose list holds the recipient. */
  env: Env;
  kind: Kind;
  to: string;
  /** The message sent in `env`, and the one sent to the same recipient in the other environment. */
  held?: string;
  free?: string;
}

const dispatcher = (d: TestDaemon) => d.app.workers.find((w) => w.name === 'dispatcher')!;

/** Ticks the dispatcher until no message is waiting for it (bounded: each tick settles a batch). */
async function settle(t: Test, d: TestDaemon): Promise<void> {
  for (let i = 0; i < 50; i++) {
    await dispatcher(d).tick();
    const waiting = await d.app.db
      .selectFrom('messages')
      .select('id')
      .where('status', 'in', ['queued', 'rendered', 'dispatched'])
      .limit(1)
      .execute();
    if (waiting.length === 0) return;
  }
  t.fail('messages still waiting for the dispatcher after 50 ticks');
}

for (const db of testDatabases()) {
  t.test(`every suppression reason holds every channel's sends in its own environment on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db, env: { POSTERN_SENDER_CAPS_ENABLED: 'false' } });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const keys: Record<Env, string> = { live: ws.live, test: ws.test };
    const capture = {} as Record<Channel, CaptureTransport>;
    for (const channel of CHANNELS) {
      capture[channel] = createCaptureTransport(`capture-${channel}`);
      d.app.outbound.registerTransport(channel, capture[channel]);
    }

    // One published template per channel, so a template send resolves in both environments.
    for (const channel of CHANNELS) {
      const slug = `hello-${channel}`;
      const created = await d.request('POST', '/v1/templates', { key: ws.live, body: { slug, channel } });
      t.ok(created.status < 300, `template ${slug}: ${JSON.stringify(created.body)}`);
      const draft = await d.request('PUT', `/v1/templates/${slug}/draft`, {
        key: ws.live,
        body: { content: CHANNEL[channel].content, variables: [] },
      });
      t.ok(draft.status < 300, JSON.stringify(draft.body));
      t.ok((await d.request('POST', `/v1/templates/${slug}/publish`, { key: ws.live })).status < 300);
    }

    const cases: Case[] = [];
    for (const reason of SUPPRESSION_REASONS) {
      for (const channel of CHANNELS) {
        for (const env of ENVS) {
          for (const kind of KINDS) cases.push({ reason, channel, env, kind, to: CHANNEL[channel].to(cases.length) });
        }
      }
    }

    // The entries, each on its environment's list only.
    for (const c of cases) {
      const address = CHANNEL[c.channel].key(c.to);
      if (c.channel === 'email') {
        const body = c.reason === 'manual' ? { address } : { address, reason: c.reason };
        const r = await d.request('POST', '/v1/suppressions', { key: keys[c.env], body });
        t.equal(r.status, 201, JSON.stringify(r.body));
        t.equal(r.body.reason, c.reason);
      } else {
        await d.app.suppressions.add({ workspaceId: ws.id, livemode: c.env === 'live' }, { address, reason: c.reason });
      }
    }

    const send = async (c: Case, env: Env) => {
      const body =
        c.kind === 'raw'
          ? { to: c.to, channel: c.channel, content: CHANNEL[c.channel].content }
          : { template: `hello-${c.channel}`, to: c.to };
      const r = await d.request('POST', c.kind === 'raw' ? '/v1/send-raw' : '/v1/send', { key: keys[env], body });
      t.equal(r.status, 202, `${c.kind} send on ${c.channel}: ${JSON.stringify(r.body)}`);
      t.equal(r.body.livemode, env === 'live');
      return r.body.id as string;
    };
    for (const c of cases) {
      c.held = await send(c, c.env);
      c.free = await send(c, other(c.env));
    }
    await settle(t, d);

    const handed = new Set(CHANNELS.flatMap((ch) => capture[ch].deliveries.map((x) => x.message.publicId)));
    const events = new Map<string, string[]>();
    for (const e of await d.app.db.selectFrom('events').select(['type', 'data']).where('workspace_id', '=', ws.id).execute()) {
      const id = (JSON.parse(e.data) as { publicId: string }).publicId;
      events.set(id, [...(events.get(id) ?? []), e.type]);
    }

    for (const c of cases) {
      const name = `${c.reason} × ${c.channel} × ${c.env} key × ${c.kind} send`;
      t.test(name, async (t) => {
        const expected = HELD[c.reason][c.kind];
        const held = (await d.request('GET', `/v1/messages/${c.held}`, { key: keys[c.env] })).body;
        const steps = (held.timeline as Array<{ e: string }>).map((x) => x.e);
        t.equal(held.status, expected, 'the listed recipient');
        if (expected === 'delivered') {
          t.ok(steps.includes('dispatched'), 'an unsubscribe does not hold a transactional send');
        } else {
          t.notOk(steps.includes('dispatched'), `never dispatched: ${steps.join(' → ')}`);
          t.equal(steps.at(-1), expected, 'the timeline ends on the hold');
          if (expected === 'suppressed') t.match(held.error, new RegExp(`on the suppression list \\(${c.reason}\\)`));
          t.equal(held.provider, null, 'no transport named');
          t.equal(held.providerMessageId, null);
          t.notOk(handed.has(c.held!), 'no transport was handed the message');
        }
        t.same(events.get(c.held!) ?? [], [EVENT[expected]], 'the outcome event, and no delivery event');

        // The same recipient in the other environment, whose list does not hold it, goes out.
        const free = (await d.request('GET', `/v1/messages/${c.free}`, { key: keys[other(c.env)] })).body;
        t.equal(free.status, 'delivered', `the same recipient with a ${other(c.env)} key is not held`);
        if (other(c.env) === 'live') t.ok(handed.has(c.free!), `the live ${c.channel} transport got it`);
        else t.equal(free.provider, 'test', 'the test channel got it');
      });
    }
  });
}
