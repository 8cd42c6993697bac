// The checks of a message (docs/deliverability.md, "Checks of every test message"): its HTML
// against the caniemail data set, its links, its spam score from rspamd, and its headers, on the
// message as the email channel composes it (channels/email composeEmail, through the same
// EmailSource as the dashboard's source view): the From delivery uses, tracking, List-Unsubscribe,
// the DKIM signature.
//
// Test-key email messages are checked on their own, after accept: the `message-checks` worker
// polls for test email messages without a result (claiming each with a row, so a cluster's nodes
// never check one twice), `checks.concurrency` at a time, never on the send path. Any message is
// checked on demand (GET /v1/messages/{id}/checks runs the checks when none are stored; POST runs
// them again). The last result is stored per message and returned until the next run.
import type * as Mailparser from 'mailparser';
import type { z } from 'zod';
import type { OutboundMessage } from '../../channel.js';
import type { Deps } from '../../deps.js';
import { flag } from '../../db/index.js';
import { rspamdVerdict } from '../../inbound/index.js';
import { AppError } from '../../lib/errors.js';
import { lazyRequire } from '../../lib/lazy.js';
import type { WorkerSpec } from '../../lib/worker.js';
import { type ContentRow, type MessageRow, rowToOutbound, type Scope, scopedContentRow } from '../../messages/index.js';
import { renderOutput } from '../../channels/index.js';
import { renderRequestOf } from '../dispatcher.js';
import { checkHeaders, headerFields } from './headers.js';
import { htmlCompatibility } from './html-compat.js';
import { createLinkChecker, linksOf, type LinkResult } from './links.js';
import type { messageChecksSchema } from '../../contract/message-checks.js';
import type { EmailOutput } from '../../contract/channels.js';

const mailparser = lazyRequire<typeof Mailparser>('mailparser');

export const CHECKS_WORKER = 'message-checks';

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skipped';

export type MessageChecks = z.infer<typeof messageChecksSchema>;

export interface MessageCheckService {
  /** The stored result, or a run now when there is none (or a run was abandoned). */
  get(scope: Scope, publicId: string): Promise<MessageChecks>;
  /** Runs the checks again and stores the result. */
  run(scope: Scope, publicId: string): Promise<MessageChecks>;
  /** The automatic checks of test-key messages. */
  readonly workerSpec: WorkerSpec;
  close(): Promise<void>;
}

const RANK: Record<CheckStatus, number> = { skipped: 0, pass: 1, warn: 2, fail: 3 };
const worst = (statuses: CheckStatus[]): CheckStatus => statuses.reduce((a, b) => (RANK[b] > RANK[a] ? b : a), 'pass');
const DAY_MS = 86_400_000;
/** How far behind the newest message the automatic pass looks again (rows, each found by its primary key). */
const CURSOR_LAG = 1000;

type CheckDeps = Pick<Deps, 'config' | 'db' | 'clock' | 'log' | 'dns'> & {
  /** The email channel's composer outside delivery (channels/email `createEmailSource`). */
  emailSource(message: OutboundMessage, content: EmailOutput, date: Date): Promise<Buffer>;
  publicUrl(): string;
};

export function createMessageChecks(deps: CheckDeps): MessageCheckService {
  const { config, db, clock, log } = deps;
  const links = createLinkChecker({ dns: deps.dns, settings: config.checks.links, now: () => clock.now().getTime() });

  /**
   * Why the message counts as bulk mail, or null. The workspace's volume is read as the
   * `bulkDailyVolume`-th email message before it (same environment, newest first, along the
   * list index): bulk when that one is less than 24 hours older, so no more than the line is read.
   */
  async function bulkReason(row: MessageRow): Promise<string | null> {
    if (row.template_slug !== null) return 'a template send';
    const line = config.checks.bulkDailyVolume;
    const nth = await db
      .selectFrom('messages')
      .select('created_at')
      .where('workspace_id', '=', row.workspace_id)
      .where('livemode', '=', row.livemode)
      .where('channel', '=', 'email')
      .where('seq', '<=', row.seq)
      .orderBy('seq', 'desc')
      .limit(1)
      .offset(line - 1)
      .executeTakeFirst();
    const since = new Date(row.created_at).getTime() - DAY_MS;
    return nth && Date.parse(nth.created_at) > since
      ? `the workspace sent at least ${line} email messages in the 24 hours before it (checks.bulkDailyVolume)`
      : null;
  }

  async function spamOf(raw: Buffer, from: string, recipient: string): Promise<MessageChecks['spam']> {
    const rs = config.inbound.rspamd;
    if (!config.checks.spam) return { status: 'skipped', summary: 'off (checks.spam)' };
    if (!rs.url) return { status: 'skipped', summary: 'no rspamd configured (inbound.rspamd.url)' };
    const ip = config.doctor.publicIps[0] ?? '127.0.0.1';
    const v = await rspamdVerdict(
      rs.url,
      rs.timeout,
      { raw, ip, helo: config.hostname, mailFrom: from, recipients: [recipient] },
      config.hostname,
    );
    if (v.result === 'temperror' || v.score === undefined)
      return { status: 'warn', summary: `no score: ${v.details ?? 'rspamd did not answer'}` };
    const over = v.requiredScore !== undefined && v.score >= v.requiredScore;
    return {
      status: v.result === 'spam' || over ? 'fail' : v.score > 0 ? 'warn' : 'pass',
      summary: `score ${v.score}${v.requiredScore !== undefined ? ` of ${v.requiredScore} required for spam` : ''}; rspamd would ${v.action}`,
      score: v.score,
      ...(v.requiredScore !== undefined ? { requiredScore: v.requiredScore } : {}),
      action: v.action,
      symbols: v.symbols,
    };
  }

  async function check(row: ContentRow, trigger: MessageChecks['trigger']): Promise<MessageChecks> {
    if (row.channel !== 'email') throw new AppError('conflict', `only an email message is checked; this one is ${row.channel}`);
    let output: EmailOutput;
    try {
      output = renderOutput(renderRequestOf(row)) as EmailOutput;
    } catch (err) {
      throw new AppError('conflict', `the message content cannot be rendered: ${(err as Error).message}`);
    }
    const raw = await deps.emailSource(rowToOutbound(row), output, new Date(row.created_at));
    const parsed = await mailparser().simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true });
    const html = typeof parsed.html === 'string' ? parsed.html : '';
    const text = parsed.text ?? '';

    const compat = html ? htmlCompatibility(html) : null;
    const htmlCheck: MessageChecks['html'] = compat
      ? {
          status: compat.findings.length ? 'warn' : 'pass',
          summary: compat.findings.length
            ? `${compat.findings.length} feature${compat.findings.length === 1 ? '' : 's'} not supported or only partly supported by some clients`
            : 'every feature found is supported by every client caniemail tested',
          dataUpdated: compat.dataUpdated,
          findings: compat.findings,
        }
      : { status: 'skipped', summary: 'no HTML part', dataUpdated: null, findings: [] };

    const own = deps.publicUrl().replace(/\/$/, '');
    const excluded = (url: string) => url.startsWith(`${own}/t/`) || url.startsWith(`${own}/u/`);
    const found = await links.check(linksOf(html, text), excluded, { reuse: trigger === 'automatic' });
    const count = (v: LinkResult['verdict']) => found.filter((l) => l.verdict === v).length;
    const bad = count('broken') + count('unresolved');
    const doubtful = count('error') + count('refused') + count('skipped');
    const linkCheck: MessageChecks['links'] = {
      status: bad ? 'fail' : doubtful ? 'warn' : 'pass',
      summary: found.length
        ? `${count('ok')} ok, ${count('broken')} broken, ${count('unresolved')} not resolving, ${count('error') + count('refused')} unreachable, ${count('excluded')} excluded (tracked), ${count('skipped')} not checked`
        : 'no links',
      links: found,
    };

    const fields = headerFields(raw);
    const bulk = await bulkReason(row);
    const items = checkHeaders(fields, bulk);
    const headerStatus = worst(items.map((i) => i.status));
    const headerCheck: MessageChecks['headers'] = {
      status: headerStatus,
      summary:
        headerStatus === 'pass'
          ? 'From, Date, Message-ID, DKIM-Signature and List-Unsubscribe as receivers ask'
          : items
              .filter((i) => i.status !== 'pass')
              .map((i) => `${i.header}: ${i.detail}`)
              .join('; '),
      bulk,
      items,
    };

    const from = /<([^<>]+)>\s*$/.exec(parsed.from?.text ?? '')?.[1] ?? parsed.from?.value[0]?.address ?? '';
    const spam = await spamOf(raw, from, row.recipient);
    return {
      id: row.public_id,
      trigger,
      checkedAt: clock.now().toISOString(),
      status: worst([htmlCheck.status, linkCheck.status, spam.status, headerCheck.status]),
      html: htmlCheck,
      links: linkCheck,
      spam,
      headers: headerCheck,
    };
  }

  async function store(row: MessageRow, result: MessageChecks): Promise<void> {
    await db
      .insertInto('message_checks')
      .values({
        message_id: row.id,
        trigger: result.trigger,
        result: JSON.stringify(result),
        started_at: result.checkedAt,
        checked_at: result.checkedAt,
      })
      .onConflict((oc) =>
        oc.column('message_id').doUpdateSet({ trigger: result.trigger, result: JSON.stringify(result), checked_at: result.checkedAt }),
      )
      .execute();
  }

  async function runOnDemand(row: ContentRow): Promise<MessageChecks> {
    const result = await check(row, 'on_demand');
    await store(row, result);
    return result;
  }

  // The automatic pass: test email messages after `cursor` (a seq) that have no row yet.
  let cursor: number | null = null;
  async function pass(): Promise<boolean> {
    if (!config.checks.automatic) return false;
    if (cursor === null) {
      const last = await db
        .selectFrom('message_checks')
        .innerJoin('messages', 'messages.id', 'message_checks.message_id')
        .select((eb) => eb.fn.max('messages.seq').as('seq'))
        .executeTakeFirst();
      cursor = Number(last?.seq ?? 0);
    }
    const top = Number(
      (
        await db
          .selectFrom('messages')
          .select((eb) => eb.fn.max('seq').as('seq'))
          .executeTakeFirst()
      )?.seq ?? 0,
    );
    // Also looks again at the last CURSOR_LAG messages: on PostgreSQL a message can commit after
    // one with a higher seq, and a cursor already past it would never see it. The ones checked
    // (or claimed) are left out by the join, so looking again finds only what was missed.
    const from = Math.max(0, Math.min(cursor, top - CURSOR_LAG));
    const since = new Date(clock.now().getTime() - DAY_MS).toISOString();
    const batch = config.checks.concurrency * 4;
    const rows = await db
      .selectFrom('messages')
      .leftJoin('message_checks', 'message_checks.message_id', 'messages.id')
      .innerJoin('message_contents', 'message_contents.message_id', 'messages.id')
      .selectAll('messages')
      .select(['message_contents.content', 'message_contents.attachments'])
      .where('messages.seq', '>', from)
      .where('messages.livemode', '=', flag(false))
      .where('messages.channel', '=', 'email')
      .where('messages.created_at', '>', since)
      .where('message_checks.message_id', 'is', null)
      .orderBy('messages.seq')
      .limit(batch)
      .execute();
    if (rows.length === 0) {
      cursor = Math.max(cursor, top);
      return false;
    }
    cursor = Math.max(cursor, Number(rows[rows.length - 1].seq));
    let next = 0;
    const lane = async () => {
      while (next < rows.length) {
        const row = rows[next++];
        const now = clock.now().toISOString();
        const claimed = await db
          .insertInto('message_checks')
          .values({ message_id: row.id, trigger: 'automatic', result: null, started_at: now, checked_at: null })
          .onConflict((oc) => oc.column('message_id').doNothing())
          .executeTakeFirst();
        if (Number(claimed.numInsertedOrUpdatedRows ?? 0) === 0) continue;
        try {
          const result = await check(row, 'automatic');
          await db
            .updateTable('message_checks')
            .set({ result: JSON.stringify(result), checked_at: result.checkedAt })
            .where('message_id', '=', row.id)
            .where('result', 'is', null)
            .execute();
        } catch (err) {
          // The claim stays (the pass does not try again); a GET runs the checks and shows why.
          log.warn({ err, message: row.public_id }, 'message checks failed');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(config.checks.concurrency, rows.length) }, lane));
    return rows.length === batch;
  }

  return {
    async get(scope, publicId) {
      const row = await scopedContentRow(db, scope, publicId);
      const stored = await db.selectFrom('message_checks').selectAll().where('message_id', '=', row.id).executeTakeFirst();
      if (stored?.result) return JSON.parse(stored.result) as MessageChecks;
      // Never checked, or the automatic pass is at it right now (or its node stopped mid-way):
      // a run now answers without waiting for it, and its result is the one kept.
      return runOnDemand(row);
    },
    async run(scope, publicId) {
      return runOnDemand(await scopedContentRow(db, scope, publicId));
    },
    workerSpec: { name: CHECKS_WORKER, intervalMs: 2000, run: () => pass() },
    close: () => links.close(),
  };
}
