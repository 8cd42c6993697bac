// Delivery status notifications (RFC 3464) and feedback reports (RFC 5965) that come back to the
// VERP return path `bounces+<msg id>@<bounce domain>`. The SMTP listener hands every message for
// the bounce domain to handle() before replying 250. Per recipient of the report:
//   Action failed  → the message becomes `failed` with the diagnostic, even after sent/delivered
//                    (the event message.failed is recorded); a hard bounce (5.1.x, 5.2.1, or a
//                    5.x.x without detail) adds the address to the suppression list;
//   Action delayed → a timeline note only;
//   a feedback report (complaint) → suppression with reason `complaint` and a timeline note.
// A report that names no known message is logged and dropped; handle() never throws on content.
import { simpleParser } from 'mailparser';
import type { Db } from '../db/database.js';
import type { EventBus } from '../events/bus.js';
import { recordEvent } from '../events/record.js';
import type { Clock } from '../lib/clock.js';
import type { Ids } from '../lib/ids.js';
import type { BounceHandler as ListenerBounceHandler } from '../inbound/bounces.js';
import type { Logger } from '../lib/logger.js';
import type { SuppressionStore } from '../suppressions/store.js';
import { rowToMessage, type TimelineEntry } from './message.js';

/** The SMTP listener's bounce contract (src/inbound/bounces.ts), and the domain it answers for. */
export interface BounceHandler extends ListenerBounceHandler {
  readonly domain: string;
}

export interface DsnRecipient {
  recipient: string;
  action: string;
  status: string;
  diagnostic: string;
}

/** Parses the per-recipient fields of a message/delivery-status body. */
export function parseDeliveryStatus(text: string): DsnRecipient[] {
  // Unfold continuation lines, then split into blank-line separated field groups.
  const groups = text
    .replace(/\r\n/g, '\n')
    .replace(/\n[ \t]+/g, ' ')
    .split(/\n\s*\n/);
  const out: DsnRecipient[] = [];
  for (const g of groups.slice(1)) {
    const fields = new Map<string, string>();
    for (const line of g.split('\n')) {
      const m = /^([A-Za-z-]+)\s*:\s*(.*)$/.exec(line.trim());
      if (m) fields.set(m[1].toLowerCase(), m[2].trim());
    }
    const rcpt = fields.get('final-recipient') ?? fields.get('original-recipient');
    if (!rcpt) continue;
    out.push({
      recipient: rcpt.replace(/^[^;]*;\s*/, '').toLowerCase(),
      action: (fields.get('action') ?? '').toLowerCase(),
      status: fields.get('status') ?? '',
      diagnostic: (fields.get('diagnostic-code') ?? '').replace(/^[^;]*;\s*/, ''),
    });
  }
  return out;
}

/**
 * The body of the top-level part whose Content-Type matches (mailparser folds report parts into
 * the text, so the multipart/report is split here). Bodies of reports are 7bit/8bit text in practice;
 * base64 is decoded for the odd MTA that encodes them.
 */
export function reportPart(raw: Buffer, boundary: string | undefined, type: RegExp): string | null {
  if (!boundary) return null;
  const text = raw.toString('utf8');
  for (const part of text.split(`--${boundary}`).slice(1)) {
    const split = /\r?\n\r?\n/.exec(part);
    if (!split) continue;
    const head = part.slice(0, split.index).replace(/\r?\n[ \t]+/g, ' ');
    const ct = /^content-type:\s*([^;\r\n]+)/im.exec(head)?.[1]?.trim() ?? '';
    if (!type.test(ct)) continue;
    const body = part.slice(split.index + split[0].length);
    return /^content-transfer-encoding:\s*base64/im.test(head) ? Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8') : body;
  }
  return null;
}

export function isHardDsnStatus(status: string): boolean {
  return /^5\.(1\.\d+|2\.1|0\.0)$/.test(status) || /^5$/.test(status);
}

export function createBounceHandler(deps: {
  db: Db;
  clock: Clock;
  ids: Ids;
  bus: EventBus;
  log: Logger;
  suppressions: SuppressionStore;
  bounceDomain: string;
}): BounceHandler {
  const verp = new RegExp(`^bounces\\+(msg_[0-9A-Za-z]+)@${deps.bounceDomain.replace(/\./g, '\\.')}$`, 'i');

  async function applyToMessage(
    publicId: string,
    change: { fail?: string; note: string; recipient?: string },
  ): Promise<{ workspaceId: string; recipient: string } | null> {
    const now = deps.clock.now().toISOString();
    let published: unknown = null;
    let found: { workspaceId: string; recipient: string } | null = null;
    await deps.db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('messages').selectAll().where('public_id', '=', publicId).executeTakeFirst();
      if (!row) return;
      found = { workspaceId: row.workspace_id, recipient: row.recipient };
      const timeline = JSON.parse(row.timeline) as TimelineEntry[];
      timeline.push({ t: now, e: change.note });
      // The message's status follows `to`: a bounce of a cc/bcc recipient is a timeline note.
      const isTo = !change.recipient || change.recipient === row.recipient.toLowerCase();
      const failNow = change.fail !== undefined && isTo && ['sent', 'delivered', 'dispatched'].includes(row.status);
      if (failNow) timeline.push({ t: now, e: 'failed' });
      const patch = failNow
        ? {
            status: 'failed',
            error: change.fail!,
            timeline: JSON.stringify(timeline),
            due_at: null,
            locked_until: null,
            locked_by: null,
            updated_at: now,
          }
        : { timeline: JSON.stringify(timeline), updated_at: now };
      await trx.updateTable('messages').set(patch).where('id', '=', row.id).where('status', '=', row.status).execute();
      if (failNow) {
        const message = rowToMessage({ ...row, ...patch } as typeof row);
        await recordEvent(trx, deps, {
          workspaceId: row.workspace_id,
          livemode: Number(row.livemode) === 1,
          type: 'message.failed',
          data: message,
        });
        published = message;
      }
    });
    if (published) {
      deps.bus.publish('events.recorded', { type: 'message.failed', workspaceId: (published as { workspaceId: string }).workspaceId });
      deps.bus.publish('message.changed', published);
    }
    return found;
  }

  return {
    domain: deps.bounceDomain,
    async handle({ raw, recipients }) {
      const publicId = recipients.map((r) => verp.exec(r)?.[1]).find(Boolean);
      if (!publicId) {
        deps.log.info({ recipients }, 'mail for the bounce domain names no message; dropped');
        return;
      }
      const parsed = await simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true });
      const type = parsed.headers.get('content-type') as { params?: Record<string, string> } | undefined;
      const reportType = String(type?.params?.['report-type'] ?? '').toLowerCase();
      if (reportType === 'feedback-report') {
        const m = await applyToMessage(publicId, { note: 'complaint: the recipient reported this message as spam' });
        if (m)
          await deps.suppressions.add(m.workspaceId, {
            address: m.recipient,
            reason: 'complaint',
            detail: 'feedback report',
            messageId: publicId,
          });
        return;
      }
      const status = reportPart(raw, type?.params?.boundary, /^message\/(global-)?delivery-status/i);
      if (!status) {
        deps.log.info({ message: publicId }, 'bounce without a delivery-status part; dropped');
        return;
      }
      for (const r of parseDeliveryStatus(status)) {
        if (r.action === 'failed') {
          const error = `bounced: ${r.recipient} ${r.status}${r.diagnostic ? ` ${r.diagnostic}` : ''}`.trim();
          const m = await applyToMessage(publicId, { fail: error, note: error, recipient: r.recipient });
          if (m && isHardDsnStatus(r.status))
            await deps.suppressions.add(m.workspaceId, { address: r.recipient, reason: 'bounce', detail: error, messageId: publicId });
        } else if (r.action === 'delayed') {
          await applyToMessage(publicId, { note: `delayed: ${r.recipient} ${r.status} ${r.diagnostic}`.trim() });
        }
      }
    },
  };
}
