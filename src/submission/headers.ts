// The X-Postern-* headers a submitted message may carry to ask for what the API's send body says
// in fields. Each is read into the field the accept path takes, and none of them is delivered: the
// message is composed again from its parts (message.ts), so no header of the original reaches the
// recipient. Tracking is a workspace setting, not a field of a send, so X-Postern-Track is refused
// with a reason rather than silently ignored.
import type { Issue } from '../lib/errors.js';

export interface PosternFields {
  metadata?: Record<string, unknown>;
  scheduledAt?: string;
  template?: string;
  vars?: Record<string, unknown>;
}

/** The header names, lower-cased as mailparser gives them. */
const POSTERN_HEADERS = {
  metadata: 'x-postern-metadata',
  scheduledAt: 'x-postern-scheduled-at',
  template: 'x-postern-template',
  vars: 'x-postern-vars',
  track: 'x-postern-track',
} as const;

const ENCODED_WORD = /=\?([^?\s]+)\?([bBqQ])\?([^?\s]*)\?=/g;

/**
 * A header value with its RFC 2047 encoded words decoded (composers such as nodemailer write a long
 * JSON value as `=?UTF-8?Q?…?=` words); whitespace between two encoded words is dropped, as the RFC says.
 */
export function decodeWords(value: string): string {
  return value.replace(/\?=\s+=\?/g, '?==?').replace(ENCODED_WORD, (word, charset: string, encoding: string, text: string) => {
    const bytes =
      encoding.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64')
        : Buffer.from(
            text.replace(/_/g, ' ').replace(/=([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))),
            'latin1',
          );
    try {
      return new TextDecoder(charset.split('*')[0]).decode(bytes);
    } catch {
      return word;
    }
  });
}

function jsonObject(name: string, value: string, issues: Issue[]): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(value);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // reported below
  }
  issues.push({ path: name, message: 'must be a JSON object on one line, such as {"orderId": "1234"}' });
  return undefined;
}

/** The fields the X-Postern-* headers ask for, and what is wrong with them. */
export function readPosternHeaders(raw: (name: string) => string | undefined): { fields: PosternFields; issues: Issue[] } {
  const get = (name: string) => {
    const v = raw(name);
    return v === undefined ? undefined : decodeWords(v).trim();
  };
  const issues: Issue[] = [];
  const fields: PosternFields = {};
  const metadata = get(POSTERN_HEADERS.metadata);
  if (metadata !== undefined) fields.metadata = jsonObject('X-Postern-Metadata', metadata, issues);
  const scheduledAt = get(POSTERN_HEADERS.scheduledAt);
  if (scheduledAt !== undefined) fields.scheduledAt = scheduledAt.trim();
  const template = get(POSTERN_HEADERS.template);
  if (template !== undefined) fields.template = template.trim();
  const vars = get(POSTERN_HEADERS.vars);
  if (vars !== undefined) {
    if (template === undefined) issues.push({ path: 'X-Postern-Vars', message: 'applies only with X-Postern-Template' });
    else fields.vars = jsonObject('X-Postern-Vars', vars, issues);
  }
  if (get(POSTERN_HEADERS.track) !== undefined) {
    issues.push({
      path: 'X-Postern-Track',
      message: 'is not supported: open and click tracking is a workspace setting (postern tracking enable|disable)',
    });
  }
  return { fields, issues };
}
