// The dashboard on a big workspace: POSTERN_BENCH_MESSAGES (1,000,000) outbound messages over the
// last 30 days, their lifecycle events and a few thousand received mails, inserted straight into a
// fresh SQLite database with multi-row statements in one transaction. Then the daemon from the
// build (its own process) is timed through a dashboard session on the API calls each page makes,
// and headless Chromium on the pages themselves. Seeded rows have every column the accept path and
// the dispatcher write (src/outbound/accept.ts, src/messages/ledger.ts), so the real readers serve
// them; nothing is due while the bench runs (deferred and scheduled messages are due hours ahead).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import type { Page } from 'playwright-core';
import { launchBrowser } from '../test/helpers/browser.js';
import { ROOT, startPostern } from './lib.js';

const MESSAGES = Number(process.env.POSTERN_BENCH_MESSAGES ?? 1_000_000);
const RECEIVED = Number(process.env.POSTERN_BENCH_RECEIVED ?? 3_000);
const RUNS = Number(process.env.POSTERN_BENCH_RUNS ?? 20);
const PAGE_RUNS = Number(process.env.POSTERN_BENCH_PAGE_RUNS ?? 5);
const NO_BROWSER = process.env.POSTERN_BENCH_NO_BROWSER === '1';
const KEEP = process.env.POSTERN_BENCH_KEEP === '1';
const DAY = 86_400_000;
const OWNER = { email: 'bench@postern.test', password: 'bench password, long enough' };

// --- a deterministic workspace ---------------------------------------------------------------

/** mulberry32: the same workspace on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = prng(15);
const int = (n: number) => Math.floor(rand() * n);
const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const HEX = '0123456789abcdef';
const chars = (alphabet: string, n: number) => {
  let s = '';
  for (let i = 0; i < n; i++) s += alphabet[int(alphabet.length)];
  return s;
};
const publicId = (prefix: string) => `${prefix}_${chars(B62, 22)}`;
/** UUIDv7 of a time, as ids.uuid() makes them. */
function uuid7(ms: number): string {
  const t = ms.toString(16).padStart(12, '0');
  return `${t.slice(0, 8)}-${t.slice(8)}-7${chars(HEX, 3)}-${HEX[8 + int(4)]}${chars(HEX, 3)}-${chars(HEX, 12)}`;
}
function pick<T>(items: readonly (readonly [T, number])[]): T {
  let r = rand();
  for (const [item, weight] of items) {
    r -= weight;
    if (r < 0) return item;
  }
  return items[items.length - 1][0];
}

type Channel = 'email' | 'sms' | 'push' | 'web-push';
interface Template {
  slug: string | null;
  channel: Channel;
  content: Record<string, unknown>;
}
const html = (title: string, body: string) =>
  `<!doctype html><html><body><table role="presentation" width="100%"><tr><td><h1>${title}</h1><p>${body}</p><p><a href="https://acme.example/account">Your account</a></p><p>Acme Inc, 1 Main Street</p></td></tr></table></body></html>`;
const TEMPLATES: readonly (readonly [Template, number])[] = [
  [
    {
      slug: 'welcome',
      channel: 'email',
      content: { subject: 'Welcome to Acme, {{name}}', html: html('Welcome, {{name}}', 'Your account is ready.') },
    },
    0.14,
  ],
  [
    {
      slug: 'password-reset',
      channel: 'email',
      content: { subject: 'Reset your password', html: html('Password reset', 'Use {{link}} within an hour.') },
    },
    0.06,
  ],
  [
    {
      slug: 'receipt',
      channel: 'email',
      content: { subject: 'Your receipt {{order}}', html: html('Thank you, {{name}}', 'Order {{order}}: {{total}}.') },
    },
    0.2,
  ],
  [
    {
      slug: 'weekly-digest',
      channel: 'email',
      content: { subject: 'Your week at Acme', html: html('This week', '{{count}} new things.') },
    },
    0.2,
  ],
  [
    { slug: 'invoice', channel: 'email', content: { subject: 'Invoice {{number}}', html: html('Invoice {{number}}', 'Due {{due}}.') } },
    0.06,
  ],
  [
    {
      slug: null,
      channel: 'email',
      content: { subject: 'About your order', text: 'Hello, a note from our support team about your order.' },
    },
    0.1,
  ],
  [{ slug: 'otp', channel: 'sms', content: { body: 'Your Acme code is {{code}}' } }, 0.08],
  [{ slug: 'shipping-update', channel: 'sms', content: { body: 'Your order {{order}} has shipped' } }, 0.04],
  [{ slug: null, channel: 'sms', content: { body: 'Acme: your appointment is tomorrow at 10:00' } }, 0.01],
  [{ slug: 'new-message', channel: 'push', content: { title: 'New message', body: '{{from}} wrote to you' } }, 0.07],
  [{ slug: 'price-alert', channel: 'web-push', content: { title: 'Price drop', body: '{{item}} is now {{price}}' } }, 0.04],
];

type Status = 'delivered' | 'sent' | 'failed' | 'suppressed' | 'blocked' | 'opted_out' | 'canceled' | 'dispatched' | 'scheduled';
const STATUS_MIX: Record<Channel, readonly (readonly [Status, number])[]> = {
  email: [
    ['delivered', 0.93],
    ['failed', 0.025],
    ['suppressed', 0.015],
    ['sent', 0.01],
    ['opted_out', 0.005],
    ['blocked', 0.003],
    ['canceled', 0.002],
    ['dispatched', 0.005],
    ['scheduled', 0.005],
  ],
  sms: [
    ['delivered', 0.84],
    ['sent', 0.1],
    ['failed', 0.03],
    ['suppressed', 0.01],
    ['opted_out', 0.015],
    ['dispatched', 0.005],
  ],
  push: [
    ['delivered', 0.9],
    ['failed', 0.04],
    ['suppressed', 0.06],
  ],
  'web-push': [
    ['delivered', 0.88],
    ['failed', 0.05],
    ['suppressed', 0.07],
  ],
};
const PROVIDER: Record<Channel, string> = { email: 'direct', sms: 'twilio', push: 'apns', 'web-push': 'web-push' };
const ERROR: Partial<Record<Status, Record<Channel, string>>> = {
  failed: {
    email: '550 5.1.1 <{to}>: Recipient address rejected: User unknown in virtual mailbox table',
    sms: 'Twilio 21211: invalid To phone number',
    push: 'APNs 400 BadDeviceToken',
    'web-push': 'push service answered 400',
  },
  suppressed: {
    email: 'suppressed: bounce',
    sms: 'suppressed: unsubscribe',
    push: 'suppressed: unregistered',
    'web-push': 'suppressed: unregistered',
  },
};
const EVENT_OF: Partial<Record<Status, string>> = {
  sent: 'message.sent',
  delivered: 'message.delivered',
  failed: 'message.failed',
  suppressed: 'message.suppressed',
  blocked: 'message.blocked',
  opted_out: 'message.opted_out',
};
const FIRST = [
  'jane',
  'john',
  'maria',
  'wei',
  'fatima',
  'olga',
  'kofi',
  'lucas',
  'aiko',
  'noah',
  'emma',
  'omar',
  'sofia',
  'liam',
  'chen',
  'ana',
];
const LAST = ['smith', 'garcia', 'muller', 'rossi', 'tanaka', 'okafor', 'silva', 'kim', 'novak', 'dubois', 'haddad', 'jensen'];
const DOMAINS: readonly (readonly [string, number])[] = [
  ['gmail.com', 0.38],
  ['outlook.com', 0.16],
  ['yahoo.com', 0.1],
  ['icloud.com', 0.09],
  ['proton.me', 0.04],
  ['acme-corp.test', 0.05],
  ['example.org', 0.18],
];
const CAMPAIGNS = ['black-friday', 'spring-sale', 'onboarding', 'winback', 'newsletter'];

interface User {
  email: string;
  phone: string;
  token: string;
  subscription: string;
  tier: string;
}
function users(n: number): User[] {
  const out: User[] = [];
  for (let k = 0; k < n; k++) {
    const endpoint = `https://fcm.googleapis.com/fcm/send/${chars(B62, 22)}`;
    out.push({
      email: `${FIRST[k % FIRST.length]}.${LAST[(k >> 4) % LAST.length]}${k}@${pick(DOMAINS)}`,
      phone: `+1${String(2_000_000_000 + k * 7)}`,
      token: chars(HEX, 64),
      subscription: JSON.stringify({ endpoint, keys: { p256dh: `B${chars(B62, 86)}`, auth: chars(B62, 22) } }),
      tier: k % 10 === 0 ? 'pro' : 'free',
    });
  }
  return out;
}

/** Multi-row INSERTs of `rows` rows each; `literal` columns take the same SQL value in every row. */
function inserter(db: SQLite.Database, table: string, columns: string[], literal: Record<string, string>, rows = 100) {
  const one = `(${columns.map((c) => literal[c] ?? '?').join(',')})`;
  const sql = (n: number) => `INSERT INTO ${table} (${columns.join(',')}) VALUES ${Array(n).fill(one).join(',')}`;
  const full = db.prepare(sql(rows));
  let params: unknown[] = [];
  let count = 0;
  return {
    add(values: unknown[]) {
      for (const v of values) params.push(v);
      if (++count === rows) {
        full.run(params);
        params = [];
        count = 0;
      }
    },
    flush() {
      if (count > 0) db.prepare(sql(count)).run(params);
      params = [];
      count = 0;
    },
  };
}

const MESSAGE_COLUMNS = [
  'id',
  'public_id',
  'channel',
  'status',
  'recipient',
  'template_slug',
  'template_version',
  'content',
  'vars',
  'metadata',
  'metadata_text',
  'search_text',
  'provider',
  'provider_connection_id',
  'provider_message_id',
  'latency_ms',
  'opened_at',
  'clicked_at',
  'error',
  'timeline',
  'created_at',
  'scheduled_at',
  'attempts',
  'due_at',
  'updated_at',
  // the same in every row
  'workspace_id',
  'livemode',
  'pinned_version',
  'interpolate',
  'from_override',
  'from_name_override',
  'cc',
  'bcc',
  'reply_to',
  'attachments',
  'idempotency_key',
  'locked_until',
  'locked_by',
];

export interface Seeded {
  /** Public ids of messages spread over the whole range, for detail timings. */
  sample: string[];
  /** One user's address (about 8 messages at 1M) and the userId metadata of the same user. */
  rareRecipient: string;
  rareUserId: string;
  seconds: number;
  events: number;
}

/** Fills the workspace; the database must hold no other connection. */
export function seed(file: string, workspaceId: string, n = MESSAGES, received = RECEIVED): Seeded {
  const started = performance.now();
  const db = new SQLite(file);
  // One writer, nothing to survive a crash: no journal, no fsync, a cache that holds the indexes.
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -1048576');
  db.pragma('foreign_keys = OFF');
  const now = Date.now();
  const from = now - 30 * DAY;
  const step = (30 * DAY - 60_000) / n;
  const people = users(Math.max(500, Math.round(n / 8)));
  const templateContent = new Map(TEMPLATES.map(([t]) => [t, JSON.stringify(t.content)]));
  const ws = `'${workspaceId.replace(/'/g, "''")}'`;
  const messages = inserter(db, 'messages', MESSAGE_COLUMNS, {
    workspace_id: ws,
    livemode: '1',
    pinned_version: 'NULL',
    interpolate: '0',
    from_override: 'NULL',
    from_name_override: 'NULL',
    cc: "'[]'",
    bcc: "'[]'",
    reply_to: 'NULL',
    attachments: "'[]'",
    idempotency_key: 'NULL',
    locked_until: 'NULL',
    locked_by: 'NULL',
  });
  const events = inserter(
    db,
    'events',
    ['id', 'type', 'data', 'created_at', 'workspace_id', 'livemode', 'endpoint_id', 'fanned_out', 'forward_checked'],
    {
      workspace_id: ws,
      livemode: '1',
      endpoint_id: 'NULL',
      fanned_out: '1',
      forward_checked: '1',
    },
    200,
  );
  // What each email attempt records per recipient (src/channels/email/recipients.ts).
  const recipients = inserter(
    db,
    'email_recipients',
    ['message_id', 'address', 'domain', 'status', 'response', 'updated_at', 'kind', 'attempts'],
    {
      kind: "'to'",
      attempts: '1',
    },
    200,
  );
  const iso = (ms: number) => new Date(ms).toISOString();
  const usage = new Map<string, number>();
  const sample: string[] = [];
  const rareUser = people[7];
  let eventCount = 0;

  db.exec('BEGIN');
  for (let i = 0; i < n; i++) {
    const t0 = Math.floor(from + i * step + rand() * step);
    const created = iso(t0);
    const template = pick(TEMPLATES);
    const channel = template.channel;
    const k = int(people.length);
    const user = people[k];
    let status = pick(STATUS_MIX[channel]);
    // Deferred and scheduled messages are recent; the old ones were delivered long ago.
    if ((status === 'dispatched' || status === 'scheduled' || status === 'canceled') && now - t0 > 2 * DAY) status = 'delivered';
    const recipient =
      channel === 'email' ? user.email : channel === 'sms' ? user.phone : channel === 'push' ? user.token : user.subscription;
    const id = publicId('msg');
    const meta: Record<string, string> = { userId: `usr_${k}` };
    if (template.slug === 'weekly-digest' || rand() < 0.1) meta.campaign = CAMPAIGNS[int(CAMPAIGNS.length)];
    if (template.slug === 'receipt' || template.slug === 'invoice') meta.orderId = `ord_${100000 + i}`;
    meta.tier = user.tier;
    const metadata = JSON.stringify(meta);
    const searchParts = [id, recipient, template.slug ?? ''];
    for (const [k, v] of Object.entries(meta)) searchParts.push(k, v);
    const vars = template.slug ? `{"name":"${FIRST[i % FIRST.length]}","order":"A-${i}","code":"${100000 + (i % 900000)}"}` : '{}';

    const tl: { t: string; e: string }[] = [{ t: created, e: 'accepted' }];
    const at = (ms: number) => iso(t0 + ms);
    const latency = channel === 'email' ? 300 + int(2500) : 150 + int(900);
    let scheduledAt: string | null = null;
    let dueAt: string | null = null;
    let attempts = 1;
    let openedAt: string | null = null;
    let clickedAt: string | null = null;
    let end = t0 + latency;
    switch (status) {
      case 'delivered':
      case 'sent':
      case 'failed':
      case 'blocked':
        tl.push({ t: at(4), e: 'rendered' });
        if (status === 'blocked') {
          tl.push({ t: at(5), e: 'blocked: automated content safety checks blocked this message' });
          break;
        }
        tl.push({ t: at(12), e: 'dispatched' });
        tl.push({ t: at(latency), e: status });
        if (status === 'delivered' && channel === 'email' && rand() < 0.3) {
          openedAt = at(latency + int(DAY));
          tl.push({ t: openedAt, e: 'opened' });
          if (rand() < 0.25) {
            clickedAt = at(latency + DAY + int(DAY));
            tl.push({ t: clickedAt, e: 'clicked' });
          }
        }
        break;
      case 'suppressed':
      case 'opted_out':
        attempts = 0;
        tl.push({ t: at(3), e: status });
        end = t0 + 3;
        break;
      case 'canceled':
        attempts = 0;
        scheduledAt = at(DAY);
        tl.push({ t: created, e: 'scheduled' }, { t: at(600_000), e: 'canceled' });
        end = t0 + 600_000;
        break;
      case 'dispatched': // deferred: it stays dispatched until the next attempt
        tl.push({ t: at(4), e: 'rendered' }, { t: at(12), e: 'dispatched' }, { t: at(latency), e: 'deferred' });
        // The next attempt is hours away, so the daemon does not deliver it during the bench.
        dueAt = iso(now + 2 * 3_600_000 + int(4 * 3_600_000));
        break;
      case 'scheduled':
        attempts = 0;
        scheduledAt = iso(now + DAY + int(6 * DAY));
        dueAt = scheduledAt;
        tl.push({ t: created, e: 'scheduled' });
        break;
    }
    const error =
      status === 'failed'
        ? ERROR.failed![channel].replace('{to}', recipient)
        : (ERROR[status]?.[channel] ?? (status === 'dispatched' ? '451 4.7.1 Greylisted, try again later' : null));
    const done = ['delivered', 'sent', 'failed'].includes(status);
    const messageId = uuid7(t0);
    messages.add([
      messageId,
      id,
      channel,
      status,
      recipient,
      template.slug,
      template.slug ? 1 : null, // the version createTemplates() publishes
      templateContent.get(template),
      vars,
      metadata,
      metadata,
      searchParts.join('\u0001'),
      done || status === 'dispatched' ? PROVIDER[channel] : null,
      null,
      done && status !== 'failed'
        ? `${channel === 'email' ? '<' : ''}${chars(B62, 16)}${channel === 'email' ? '@bench.acme.example>' : ''}`
        : null,
      done ? latency : null,
      openedAt,
      clickedAt,
      error,
      JSON.stringify(tl),
      created,
      scheduledAt,
      attempts,
      dueAt,
      iso(Math.min(end, now)),
    ]);
    if (channel === 'email' && (done || status === 'dispatched')) {
      const reply =
        status === 'failed'
          ? ERROR.failed!.email.replace('{to}', recipient)
          : status === 'dispatched'
            ? error
            : `250 2.0.0 Ok: queued as ${chars(HEX, 10).toUpperCase()}`;
      recipients.add([
        messageId,
        recipient,
        recipient.split('@')[1],
        status === 'failed' ? 'failed' : status === 'dispatched' ? 'deferred' : 'accepted',
        reply,
        iso(Math.min(end, now)),
      ]);
    }
    const month = created.slice(0, 7);
    usage.set(month, (usage.get(month) ?? 0) + 1);
    if (i % Math.max(1, Math.floor(n / 40)) === 7) sample.push(id);

    // The lifecycle event of the final status, and engagement; as small as a real payload's id part.
    const type = EVENT_OF[status];
    if (type) {
      events.add([publicId('evt'), type, `{"id":"${id}","status":"${status}","channel":"${channel}"}`, iso(Math.min(end, now))]);
      eventCount++;
    }
    if (openedAt) {
      events.add([publicId('evt'), 'message.opened', `{"id":"${id}","status":"delivered"}`, openedAt]);
      eventCount++;
    }
    if (clickedAt) {
      events.add([
        publicId('evt'),
        'message.clicked',
        `{"id":"${id}","status":"delivered","url":"https://acme.example/account"}`,
        clickedAt,
      ]);
      eventCount++;
    }
  }
  messages.flush();
  recipients.flush();

  // Received mail over the same 30 days: the raw source (small), the parsed row, its event.
  const raws = inserter(db, 'inbound_raw', ['id', 'source', 'received_at', 'purged_at'], { purged_at: 'NULL' }, 50);
  const rcv = inserter(
    db,
    'received_messages',
    [
      'id',
      'public_id',
      'status',
      'address',
      'plus_tag',
      'raw_id',
      'envelope',
      'from_email',
      'parsed',
      'subject',
      'size_bytes',
      'received_at',
      'workspace_id',
      'livemode',
      'address_id',
    ],
    { workspace_id: ws, livemode: '1', address_id: 'NULL' },
    50,
  );
  const rstep = (30 * DAY) / Math.max(1, received);
  const inbound = new Map<string, number>();
  for (let i = 0; i < received; i++) {
    const ms = Math.floor(from + i * rstep + rand() * rstep);
    const receivedAt = `${iso(ms).slice(0, 23)}${String(i % 1_000_000).padStart(6, '0')}Z`;
    const sender = people[int(people.length)].email;
    const subject = `Re: ${pick([
      ['Your receipt', 1],
      ['Question about my order', 1],
      ['Invoice', 1],
    ] as const)} #${i}`;
    const text = `Hello,\n\nthanks for the quick reply. One more question about order A-${i}.\n\nBest regards`;
    const source = Buffer.from(
      `Return-Path: <${sender}>\r\nFrom: <${sender}>\r\nTo: support@in.acme.example\r\nSubject: ${subject}\r\nMessage-ID: <${i}.bench@mail.example>\r\n\r\n${text.replace(/\n/g, '\r\n')}\r\n`,
    );
    const rawId = uuid7(ms);
    raws.add([rawId, source, receivedAt]);
    const parsed = {
      from: { email: sender, name: '' },
      to: [{ email: 'support@in.acme.example', name: 'Acme support' }],
      cc: [],
      messageId: `<${i}.bench@mail.example>`,
      inReplyTo: '',
      text,
      html: `<p>${text.replace(/\n/g, '<br>')}</p>`,
      truncated: false,
      headers: { from: `<${sender}>`, to: 'support@in.acme.example', subject },
      attachments: [],
      verdicts: {
        spf: { result: 'pass', details: 'spf=pass' },
        dkim: { result: 'pass', details: 'dkim=pass', signatures: [{ domain: sender.split('@')[1], selector: 's1', result: 'pass' }] },
        dmarc: { result: 'pass', details: 'dmarc=pass', policy: 'none' },
        arc: { result: 'none', details: '' },
      },
    };
    const rid = publicId('rcv');
    rcv.add([
      uuid7(ms),
      rid,
      'received',
      'support@in.acme.example',
      '',
      rawId,
      JSON.stringify({ from: sender, to: ['support@in.acme.example'] }),
      sender,
      JSON.stringify(parsed),
      subject,
      source.length,
      receivedAt,
    ]);
    events.add([publicId('evt'), 'message.received', `{"id":"${rid}"}`, receivedAt]);
    eventCount++;
    const month = receivedAt.slice(0, 7);
    inbound.set(month, (inbound.get(month) ?? 0) + 1);
  }
  raws.flush();
  rcv.flush();
  events.flush();
  // The counters the accept and receive paths keep for plan quotas.
  const putUsage = db.prepare('INSERT INTO message_usage (workspace_id, month, count) VALUES (?, ?, ?)');
  for (const [month, count] of usage) putUsage.run(workspaceId, month, count);
  const putInbound = db.prepare('INSERT INTO inbound_usage (workspace_id, month, received) VALUES (?, ?, ?)');
  for (const [month, count] of inbound) putInbound.run(workspaceId, month, count);
  db.exec('COMMIT');
  db.pragma('journal_mode = WAL');
  db.close();
  return {
    sample,
    rareRecipient: rareUser.email,
    rareUserId: 'usr_7',
    seconds: (performance.now() - started) / 1000,
    events: eventCount,
  };
}

// --- timing -------------------------------------------------------------------------------------

/** The 1-minute load average: these figures move with whatever else the machine runs. */
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0];

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}
const ms = (v: number) => `${v.toFixed(1).padStart(7)} ms`;

interface Session {
  base: string;
  headers: Record<string, string>;
  csrf: string;
}

async function login(base: string, workspaceId: string): Promise<Session> {
  const r = await fetch(`${base}/dashboard/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(OWNER),
  });
  if (!r.ok) throw new Error(`login: ${r.status} ${await r.text()}`);
  const cookie = r.headers.getSetCookie()[0].split(';')[0];
  const me = (await r.json()) as { csrfToken: string };
  const s = { base, headers: { cookie }, csrf: me.csrfToken };
  await call(s, 'PUT', '/dashboard/api/selection', { workspaceId, env: 'live' });
  return s;
}

async function call(s: Session, method: string, p: string, body?: unknown): Promise<any> {
  const r = await fetch(`${s.base}${p}`, {
    method,
    headers: { ...s.headers, 'content-type': 'application/json', 'x-csrf-token': s.csrf },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${await r.text()}`);
  return r.json();
}

/** The templates the seeded messages name, made through the API (so the template filter lists them). */
async function createTemplates(s: Session): Promise<void> {
  for (const [t] of TEMPLATES) {
    if (!t.slug) continue;
    await call(s, 'POST', '/v1/templates', { slug: t.slug, channel: t.channel });
    await call(s, 'PUT', `/v1/templates/${t.slug}/draft`, { content: t.content });
    await call(s, 'POST', `/v1/templates/${t.slug}/publish`);
  }
}

interface ApiFigure {
  label: string;
  median?: number;
  p95?: number;
  note: string;
}

/** GET `p` RUNS times after one warm-up; n/a when it answers 404 (a route not there yet). */
async function timeGet(s: Session, label: string, p: string, runs = RUNS): Promise<ApiFigure> {
  const samples: number[] = [];
  let note = '';
  for (let i = 0; i <= runs; i++) {
    const t0 = performance.now();
    const r = await fetch(`${s.base}${p}`, { headers: s.headers });
    const text = await r.text();
    const t = performance.now() - t0;
    if (r.status === 404 && i === 0) return { label, note: 'n/a (404)' };
    if (!r.ok) throw new Error(`GET ${p}: ${r.status} ${text.slice(0, 300)}`);
    if (i === 0) {
      const j = JSON.parse(text);
      const rows = Array.isArray(j.data) ? j.data.length : Array.isArray(j.messages) ? j.messages.length : undefined;
      note = rows === undefined ? `${text.length} bytes` : `${rows} rows`;
      continue; // warm-up
    }
    samples.push(t);
  }
  samples.sort((a, b) => a - b);
  return { label, median: quantile(samples, 0.5), p95: quantile(samples, 0.95), note };
}

function printFigure(f: ApiFigure): void {
  const fig = f.median === undefined ? `${'n/a'.padStart(10)}   ${''.padStart(10)}` : `${ms(f.median)}   ${ms(f.p95!)}`;
  console.log(`${f.label.padEnd(58)} ${fig}   ${f.note}`);
}

async function apiTimings(s: Session, seeded: Seeded): Promise<ApiFigure[]> {
  const list = (q: string) => `/v1/messages?limit=50${q}`;
  const figures: ApiFigure[] = [];
  const add = async (label: string, p: string, runs = RUNS) => {
    const f = await timeGet(s, label, p, runs);
    printFigure(f);
    figures.push(f);
  };
  console.log(`${`API call through a dashboard session, ${RUNS} runs`.padEnd(58)}     median          p95`);
  await add('messages: first page', list(''));
  await add('  status=failed', list('&status=failed'));
  await add('  status=canceled (rare)', list('&status=canceled'));
  await add('  channel=sms', list('&channel=sms'));
  await add('  channel=web-push', list('&channel=web-push'));
  await add('  template=password-reset', list('&template=password-reset'));
  await add('  q=acme-corp.test (a domain, ~5%)', list('&q=acme-corp.test'));
  await add(`  q=${seeded.rareRecipient} (one recipient)`, list(`&q=${encodeURIComponent(seeded.rareRecipient)}`), Math.min(RUNS, 5));
  await add('  metadata[campaign]=black-friday', list('&metadata[campaign]=black-friday'));
  await add(`  metadata[userId]=${seeded.rareUserId} (one user)`, list(`&metadata[userId]=${seeded.rareUserId}`), Math.min(RUNS, 5));
  await add('  status=failed&channel=email&q=gmail', list('&status=failed&channel=email&q=gmail'));

  // The 100th page through nextCursor, as "Older →" would reach it.
  let cursor: string | null = null;
  const walk0 = performance.now();
  for (let page = 1; page < 100; page++) {
    const r = (await call(s, 'GET', list(cursor ? `&cursor=${cursor}` : ''))) as { nextCursor: string | null };
    cursor = r.nextCursor;
    if (!cursor) break;
  }
  const walk = performance.now() - walk0;
  if (cursor) {
    await add('messages: 100th page (cursor)', list(`&cursor=${cursor}`));
    console.log(`${'  pages 1-99 walked in sequence'.padEnd(58)} ${ms(walk)} in all`);
  }

  const details: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const id = seeded.sample[i % seeded.sample.length];
    const t0 = performance.now();
    await call(s, 'GET', `/v1/messages/${id}`);
    details.push(performance.now() - t0);
  }
  details.sort((a, b) => a - b);
  const detail = {
    label: 'GET /v1/messages/{id} (ids across the range)',
    median: quantile(details, 0.5),
    p95: quantile(details, 0.95),
    note: '',
  };
  printFigure(detail);
  figures.push(detail);
  await add('GET /dashboard/api/overview', '/dashboard/api/overview');
  await add('GET /v1/inbound/messages (first page)', '/v1/inbound/messages?limit=50');
  return figures;
}

// --- the pages in Chromium ------------------------------------------------------------------

/**
 * Milliseconds, on the page's own clock, from the start of its navigation (or from the click that
 * set `benchT0`) to the next frame; the page's clock leaves out the DevTools round trips.
 */
const elapsed = (page: Page): Promise<number> =>
  page.evaluate('new Promise((r) => requestAnimationFrame(() => r(performance.now() - (globalThis.benchT0 ?? 0))))');

/**
 * From `go` (a navigation or a click) to the page having made the API call `api` names and shown
 * `ready`, PAGE_RUNS times; n/a when the page never makes that call (a page not built yet).
 */
async function timePage(
  page: Page,
  label: string,
  go: () => Promise<unknown>,
  api: (url: URL) => boolean,
  ready: () => Promise<unknown>,
  before: () => Promise<unknown> = async () => {},
): Promise<void> {
  const samples: number[] = [];
  for (let i = 0; i <= PAGE_RUNS; i++) {
    await before();
    const answered = page.waitForResponse((r) => api(new URL(r.url())), { timeout: 10_000 }).catch(() => null);
    try {
      await go();
    } catch (err) {
      return void console.log(`${label.padEnd(58)} ${'n/a'.padStart(10)}   (${(err as Error).message.split('\n')[0]})`);
    }
    const r = await answered;
    if (!r) return void console.log(`${label.padEnd(58)} ${'n/a'.padStart(10)}   (the page made no such API call)`);
    if (r.status() === 404) return void console.log(`${label.padEnd(58)} ${'n/a'.padStart(10)}   (${new URL(r.url()).pathname} 404)`);
    try {
      await ready();
    } catch {
      return void console.log(`${label.padEnd(58)} ${'n/a'.padStart(10)}   (nothing rendered to wait for)`);
    }
    const t = await elapsed(page);
    if (i > 0) samples.push(t); // the first run warms the caches
  }
  samples.sort((a, b) => a - b);
  console.log(`${label.padEnd(58)} ${ms(quantile(samples, 0.5))}   ${ms(samples[samples.length - 1])}   (max of ${samples.length})`);
}

async function pageTimings(base: string, seeded: Seeded): Promise<void> {
  const teardowns: (() => unknown)[] = [];
  const browser = await launchBrowser({ teardown: (fn) => void teardowns.push(fn) });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/`);
    await page.getByLabel('Email').fill(OWNER.email);
    await page.getByLabel('Password').fill(OWNER.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();

    const open = (p: string) => page.goto(`${base}${p}`, { waitUntil: 'commit' });
    const until = (check: string) => page.waitForFunction(check, null, { polling: 'raf', timeout: 10_000 });
    const rows = () => until(`!!document.querySelector('table tbody tr')`);
    const messagesCall = (check: (q: URLSearchParams) => boolean) => (u: URL) =>
      u.pathname === '/v1/messages' && u.searchParams.get('tail') !== '1' && check(u.searchParams);
    console.log(`\n${`Page in Chromium (navigation or click → rendered), ${PAGE_RUNS} runs`.padEnd(58)}     median          max`);
    await timePage(
      page,
      'Messages list',
      () => open(`/dashboard/messages`),
      messagesCall((q) => !q.has('cursor')),
      rows,
    );
    await timePage(
      page,
      'Messages list, status=failed (from the URL)',
      () => open(`/dashboard/messages?status=failed`),
      messagesCall((q) => q.get('status') === 'failed'),
      rows,
    );
    let first = '';
    await timePage(
      page,
      'Messages: "Older" to the next page',
      // A DOM click: Playwright's own click waits for actionability checks first.
      () =>
        page.evaluate(`{
          const older = [...document.querySelectorAll('button')].find((b) => /older/i.test(b.textContent));
          if (!older) throw new Error('no "Older" button');
          globalThis.benchT0 = performance.now();
          older.click();
        }`),
      messagesCall((q) => q.has('cursor')),
      () => until(`document.querySelector('table tbody tr')?.textContent !== ${JSON.stringify(first)}`),
      async () => {
        await page.goto(`${base}/dashboard/messages`);
        await rows().catch(() => {});
        first =
          (await page
            .locator('table tbody tr')
            .first()
            .textContent({ timeout: 1_000 })
            .catch(() => '')) ?? '';
      },
    );
    const id = seeded.sample[Math.floor(seeded.sample.length / 2)];
    await timePage(
      page,
      'Message detail',
      () => open(`/dashboard/messages/${id}`),
      (u) => u.pathname === `/v1/messages/${id}`,
      () => until(`document.querySelector('main, #app')?.textContent.includes(${JSON.stringify(id)})`),
    );
    await timePage(
      page,
      'Overview',
      () => open(`/dashboard/`),
      (u) => u.pathname === '/dashboard/api/overview',
      // Its heading, once the figures it asked for have come back.
      () => until(`document.querySelector('h1')?.textContent === 'Overview'`),
    );
    await timePage(
      page,
      'Inbound: received mail',
      () => open(`/dashboard/inbound`),
      (u) => u.pathname === '/v1/inbound/messages',
      rows,
    );
  } finally {
    for (const fn of teardowns.reverse()) await fn();
  }
}

// --- the run ----------------------------------------------------------------------------------------

export async function run(): Promise<void> {
  // The bench's own settings are not the daemon's (it would warn about each): read above, gone here.
  for (const k of Object.keys(process.env)) if (k.startsWith('POSTERN_BENCH_')) delete process.env[k];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-bench-dashboard-'));
  const env = { ...process.env, POSTERN_DATA_DIR: dataDir, POSTERN_LOG_LEVEL: 'warn' };
  const cli = (args: string[], input?: string) =>
    JSON.parse(execFileSync(process.execPath, [path.join(ROOT, 'bin', 'postern.js'), ...args], { env, input }).toString());
  try {
    // With a workspace and an operator in place, serve bootstraps nothing.
    execFileSync(process.execPath, [path.join(ROOT, 'bin', 'postern.js'), 'migrate'], { env, stdio: 'ignore' });
    const ws = cli(['workspace', 'create', '--slug', 'bench', '--name', 'Bench', '--plan', 'custom']) as { id: string };
    cli(['operator', 'create', '--email', OWNER.email, '--role', 'owner'], `${OWNER.password}\n`);
    console.log(`load average ${load()} before seeding`);
    const seeded = seed(path.join(dataDir, 'postern.sqlite'), ws.id);
    const size = statSync(path.join(dataDir, 'postern.sqlite')).size;
    console.log(
      `seeded ${MESSAGES.toLocaleString('en')} messages, ${seeded.events.toLocaleString('en')} events, ${RECEIVED.toLocaleString('en')} received mails in ${seeded.seconds.toFixed(1)} s (database ${(size / 2 ** 20).toFixed(0)} MiB)`,
    );

    const boot = performance.now();
    const postern = await startPostern({ POSTERN_DATA_DIR: dataDir, POSTERN_LOG_LEVEL: 'warn', POSTERN_RATE_LIMIT_READ: '0' });
    try {
      console.log(`daemon ready ${((performance.now() - boot) / 1000).toFixed(1)} s after spawn on the seeded database`);
      const base = `http://127.0.0.1:${postern.port}`;
      const s = await login(base, ws.id);
      await createTemplates(s);
      // The seeded rows read back through the real readers.
      const m = (await call(s, 'GET', `/v1/messages/${seeded.sample[0]}`)) as { publicId: string; timeline: unknown[] };
      if (m.publicId !== seeded.sample[0] || m.timeline.length < 2) throw new Error('a seeded message does not read back');
      const received = (await call(s, 'GET', '/v1/inbound/messages?limit=1')) as { messages: { id: string }[] };
      const mail = (await call(s, 'GET', `/v1/inbound/messages/${received.messages[0].id}`)) as { verdicts: { spf: { result: string } } };
      if (mail.verdicts.spf.result !== 'pass') throw new Error('a seeded received mail does not read back');
      console.log('');
      await apiTimings(s, seeded);
      if (!NO_BROWSER) await pageTimings(base, seeded);
    } finally {
      await postern.stop();
    }
    console.log(`load average ${load()} at the end`);
    const sizes = path.join(ROOT, 'dist', 'ui', 'sizes.json');
    if (existsSync(sizes)) {
      const { gzipBytes, files } = JSON.parse(readFileSync(sizes, 'utf8')) as { gzipBytes: number; files: string[] };
      console.log(`\nfirst load: ${(gzipBytes / 1024).toFixed(1)} KiB of JS and CSS, gzip (${files.join(', ')}); limit ~150 KB`);
    }
  } finally {
    if (!KEEP) rmSync(dataDir, { recursive: true, force: true });
    else console.log(`kept ${dataDir}`);
  }
}
