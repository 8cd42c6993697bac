// Delivery status notifications (RFC 3464) and feedback reports (RFC 5965) that come back to the
// VERP return path `bounces+<msg id>@<bounce domain>`. The SMTP listener hands every message for
// the bounce domain to handle() before replying 250, so what it records is durable before the 250.
// Per recipient of the report:
//   Action failed  → the message becomes `failed` with the diagnostic, even after sent/delivered
//                    (the event message.failed is recorded); a hard bounce (5.1.x, 5.2.1, or a
//                    5.x.x without detail) adds the address to the suppression list;
//   Action delayed → a timeline note only;
//   a feedback report (complaint) → suppression with reason `complaint` and a timeline note.
// A report for a forward comes back to the forward's SRS address instead: the forwarding module
// (`forwards`) names the message it is about, and it is handled the same way, with a note.
// A report that names no known message is logged and dropped; handle() never throws on content.
import type * as Mailparser from 'mailparser';
import { lazyRequire } from '../../lib/lazy.js';
import type { BounceRules } from './bounce-rules.js';
import type { Deps } from '../../deps.js';
import type { Ledger } from '../../messages/index.js';
import type { SuppressionStore } from '../../suppressions/index.js';
import { isSet } from '../../db/index.js';

const mailparser = lazyRequire<typeof Mailparser>('mailparser');

/** Mail for the bounce domain, as the SMTP listener hands it over (before its 250). */
export interface BounceInput {
  raw: Buffer;
  mailFrom: string;
  /** The recipients of this transaction that are on the bounce domain. */
  recipients: string[];
}

/** Finds the forward a report sent to an SRS address is about (forwarding/bounces.ts). */
export interface ForwardedBounces {
  /** The forward's message and a timeline note, or null when the report names none of ours. */
  messageFor(input: { raw: Buffer; recipients: string[]; reported: string[] }): Promise<{ publicId: string; note: string } | null>;
}

export interface BounceHandler {
  /** The bounce domain it answers for. */
  readonly domain: string;
  /** Makes what the report says durable; never throws on content. */
  handle(input: BounceInput): Promise<void>;
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
function reportPart(raw: Buffer, boundary: string | undefined, type: RegExp): string | null {
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

export function createBounceHandler(
  deps: Pick<Deps, 'log'> & {
    ledger: Ledger;
    suppressions: SuppressionStore;
    bounceDomain: string;
    forwards?: ForwardedBounces;
    /** The bounce rules (bounce-rules.ts): they decide whether a failed DSN suppresses its address. */
    rules?: BounceRules;
    /** A complaint or a failed DSN about a message (warm-up counts them for the source that sent it). */
    reported?: (messageId: string, what: 'complained' | 'bounced') => Promise<void>;
  },
): BounceHandler {
  const { ledger } = deps;
  // A failed DSN suppresses its address when the bounce rules say hard (the diagnostic's reply code
  // and text, the DSN's status), and on its status alone when no rule names it.
  const suppresses = (r: DsnRecipient): boolean => {
    const code = /^([245]\d\d)\b/.exec(r.diagnostic)?.[1];
    const rule = deps.rules?.match({ code: code ? Number(code) : undefined, status: r.status || undefined, text: r.diagnostic });
    return rule ? rule.action === 'hard' : isHardDsnStatus(r.status);
  };
  // The shared bounce domain, or a custom domain's own return path (routing lets only confirmed ones through).
  const verp = new RegExp(`^bounces\\+(msg_[0-9A-Za-z]+)@(?:${deps.bounceDomain.replace(/\./g, '\\.')}|bounces\\.[a-z0-9.-]+)$`, 'i');

  // A note on the message's timeline, and when the report fails its `to` recipient, the message
  // fails (the ledger decides whether its status still allows that). Returns who it was sent to.
  async function applyToMessage(
    publicId: string,
    report: { fail?: string; note: string; recipient?: string },
  ): Promise<{ workspaceId: string; livemode: boolean; recipient: string } | null> {
    const done = await ledger.update(
      (trx) => trx.selectFrom('messages').selectAll().where('public_id', '=', publicId).executeTakeFirst(),
      (row) => {
        const change = ledger.change(row).note(report.note);
        // The message's status follows `to`: a bounce of a cc/bcc recipient is a timeline note.
        const isTo = !report.recipient || report.recipient === row.recipient.toLowerCase();
        if (report.fail !== undefined && isTo && change.can('failed', 'dsn')) {
          change.step('failed', 'dsn');
          change.set({ error: report.fail, due_at: null, locked_until: null, locked_by: null });
        }
        return change;
      },
    );
    return done ? { workspaceId: done.read.workspace_id, livemode: isSet(done.read.livemode), recipient: done.read.recipient } : null;
  }

  // What the report said reaches warm-up too; a failure to count it never loses the report.
  const tell = async (publicId: string, what: 'complained' | 'bounced') => {
    await deps.reported?.(publicId, what).catch((err: unknown) => deps.log.warn({ err, message: publicId }, 'warm-up: report not counted'));
  };

  return {
    domain: deps.bounceDomain,
    async handle({ raw, recipients }) {
      const verpId = recipients.map((r) => verp.exec(r)?.[1]).find(Boolean);
      if (!verpId && !deps.forwards) {
        deps.log.info({ recipients }, 'mail for the bounce domain names no message; dropped');
        return;
      }
      const parsed = await mailparser().simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true });
      const type = parsed.headers.get('content-type') as { params?: Record<string, string> } | undefined;
      const reportType = String(type?.params?.['report-type'] ?? '').toLowerCase();
      const status =
        reportType === 'feedback-report' ? null : reportPart(raw, type?.params?.boundary, /^message\/(global-)?delivery-status/i);
      const reported = status ? parseDeliveryStatus(status) : [];
      const forward = verpId ? null : await deps.forwards!.messageFor({ raw, recipients, reported: reported.map((r) => r.recipient) });
      const publicId = verpId ?? forward?.publicId;
      if (!publicId) {
        deps.log.info({ recipients }, 'mail for the bounce domain names no message; dropped');
        return;
      }
      if (forward) await applyToMessage(publicId, { note: forward.note });
      if (reportType === 'feedback-report') {
        const m = await applyToMessage(publicId, { note: 'complaint: the recipient reported this message as spam' });
        await tell(publicId, 'complained');
        if (m)
          await deps.suppressions.add(m, {
            address: m.recipient,
            reason: 'complaint',
            detail: 'feedback report',
            messageId: publicId,
          });
        return;
      }
      if (!status) {
        deps.log.info({ message: publicId }, 'bounce without a delivery-status part; dropped');
        return;
      }
      for (const r of reported) {
        if (r.action === 'failed') {
          const error = `bounced: ${r.recipient} ${r.status}${r.diagnostic ? ` ${r.diagnostic}` : ''}`.trim();
          const m = await applyToMessage(publicId, { fail: error, note: error, recipient: r.recipient });
          await tell(publicId, 'bounced');
          if (m && suppresses(r))
            await deps.suppressions.add(m, { address: r.recipient, reason: 'bounce', detail: error, messageId: publicId });
        } else if (r.action === 'delayed') {
          await applyToMessage(publicId, { note: `delayed: ${r.recipient} ${r.status} ${r.diagnostic}`.trim() });
        }
      }
    },
  };
}
