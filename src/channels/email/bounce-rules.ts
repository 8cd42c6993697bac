// Bounce rules as data (config/bounces.json, or the file `delivery.bounceRules` names): how an SMTP
// reply at delivery and a DSN's diagnostic are judged. The first rule whose every given field
// matches decides: `code` (the reply code or its first digits), `status` (the enhanced status code
// or its prefix: `5.1.` matches 5.1.1) and `text` (a case-insensitive regular expression on the
// reply). Its `action` says what happens to the message and the address — hard: failed and the
// address suppressed; soft: failed, the address kept; defer: retried — and its `category` names
// the cause on the timeline, in metrics and in the per-destination counts. A reply no rule matches
// is judged on its codes alone, as before the rules existed (classify.ts).
// The file is read again when it changes (looked at most once a second); a broken file keeps the
// rules in force and logs why; a broken file at start stops the daemon (a setting to fix, exit 2).
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { ConfigError } from '../../config.js';
import type { Logger } from '../../lib/logger.js';
import { systemClock, type Clock } from '../../lib/clock.js';

export const BOUNCE_CATEGORIES = [
  'unknown_user',
  'mailbox_full',
  'policy',
  'spam',
  'rate_limited',
  'greylisted',
  'dns',
  'tls',
  'connection',
  'other',
] as const;
export type BounceCategory = (typeof BOUNCE_CATEGORIES)[number];
export type BounceAction = 'hard' | 'soft' | 'defer';

const ruleSchema = z
  .strictObject({
    name: z.string().min(1),
    code: z
      .string()
      .regex(/^[245]\d{0,2}$/, 'must be a reply code or its first digits, such as 550 or 4')
      .optional(),
    status: z
      .string()
      .regex(/^[245](\.\d{1,3}(\.\d{0,3})?)?\.?$/, 'must be an enhanced status code or its prefix, such as 5.1.1 or 5.7.')
      .optional(),
    text: z
      .string()
      .refine((v) => {
        try {
          new RegExp(v, 'i');
          return true;
        } catch {
          return false;
        }
      }, 'must be a valid regular expression')
      .optional(),
    action: z.enum(['hard', 'soft', 'defer']),
    category: z.enum(BOUNCE_CATEGORIES),
  })
  .refine((r) => r.code !== undefined || r.status !== undefined || r.text !== undefined, 'a rule must match on code, status or text');

const fileSchema = z.object({ $comment: z.string().optional(), rules: z.array(ruleSchema) });

export interface BounceRule {
  name: string;
  code?: string;
  status?: string;
  text?: RegExp;
  action: BounceAction;
  category: BounceCategory;
}

/** What a reply looks like to the rules. */
export interface Reply {
  code?: number;
  /** The enhanced status code (5.1.1), when the reply or DSN carries one. */
  status?: string;
  text: string;
}

export interface BounceRules {
  /** The first matching rule, or null. */
  match(reply: Reply): BounceRule | null;
  /** Where the rules come from. */
  readonly file: string;
}

const shipped = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'config', 'bounces.json');

/** The enhanced status code in a reply's text (RFC 3463), if any. */
export const enhancedStatusOf = (text: string): string | undefined => /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec(text)?.[1];

function load(file: string): BounceRule[] {
  const parsed = fileSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${issue.path.join('.') || 'the file'}: ${issue.message}`);
  }
  return parsed.data.rules.map((r) => ({ ...r, text: r.text === undefined ? undefined : new RegExp(r.text, 'i') }));
}

function matches(rule: BounceRule, reply: Reply): boolean {
  if (rule.code !== undefined && (reply.code === undefined || !String(reply.code).startsWith(rule.code))) return false;
  if (rule.status !== undefined) {
    if (!reply.status) return false;
    if (rule.status.endsWith('.') ? !reply.status.startsWith(rule.status) : reply.status !== rule.status) return false;
  }
  if (rule.text !== undefined && !rule.text.test(reply.text)) return false;
  return true;
}

/** The rules of `delivery.bounceRules` (empty: the shipped file). Throws ConfigError when unusable at start. */
export function loadBounceRules(setting: string, log?: Pick<Logger, 'info' | 'error'>, clock: Clock = systemClock): BounceRules {
  const file = setting ? path.resolve(setting) : shipped;
  let rules: BounceRule[];
  let mtime = 0;
  try {
    rules = load(file);
    mtime = statSync(file).mtimeMs;
  } catch (err) {
    throw new ConfigError(`invalid setting delivery.bounceRules (POSTERN_DELIVERY_BOUNCE_RULES): ${file}: ${(err as Error).message}`);
  }
  // The file is looked at again at most once a second of the injected clock (a stat per reply would
  // cost more than the rules).
  let lookedAt = clock.now().getTime();
  const fresh = () => {
    const now = clock.now().getTime();
    if (now - lookedAt < 1000) return;
    lookedAt = now;
    try {
      const m = statSync(file).mtimeMs;
      if (m === mtime) return;
      mtime = m;
      rules = load(file);
      log?.info({ file, rules: rules.length }, 'bounce rules reloaded');
    } catch (err) {
      log?.error({ file, err: (err as Error).message }, 'bounce rules not reloaded: the file is broken; the rules in force stay');
    }
  };
  return {
    file,
    match(reply) {
      fresh();
      return rules.find((r) => matches(r, reply)) ?? null;
    },
  };
}
