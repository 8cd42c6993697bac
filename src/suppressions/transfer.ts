// Suppression lists in bulk: import from a file (CSV, NDJSON or a JSON array) and export in the
// same forms. An import reads its body as a stream and writes it in chunks, so a list of a million
// lines takes the memory of one chunk. It is idempotent: a line adds its address, strengthens an
// unsubscribe to a harder reason, or replaces an expired entry, and otherwise leaves the entry as
// it is, so the same file imported twice changes nothing the second time.
//
// The columns of the hosted vendors' exports are recognised (SendGrid's `email`, `created`,
// `reason`; Postmark's `EmailAddress`, `SuppressionReason`, `CreatedAt`), and their
// reasons mapped (REASONS); a reason that is not recognised takes the import's default reason and
// is kept as the entry's detail (SendGrid's bounce export carries the SMTP reply there).
import { pipeline, type Readable } from 'node:stream';
import type * as CsvParse from 'csv-parse';
import { lazyRequire } from '../lib/lazy.js';
import { csvQuote } from '../lib/csv.js';
import type { Deps } from '../deps.js';
import { flag, type SuppressionsTable } from '../db/index.js';
import { isEmailAddress } from '../contract/addresses.js';
import { WILDCARD } from '../contract/suppression-schemas.js';
import { normalizeAddress, type ListScope, type Suppression, type SuppressionStore } from './store.js';
import type { SuppressionReason } from '../contract/vocabulary.js';

// Loaded at the first CSV import: most daemons never read one.
const csvParse = lazyRequire<typeof CsvParse>('csv-parse');

export type TransferFormat = 'csv' | 'ndjson' | 'json';

/** Lines written per statement: few enough for SQLite's bound-parameter limit, many enough to be quick. */
const CHUNK = 500;
/** Refused lines listed in the answer; the count goes on. */
const MAX_LISTED = 1000;
const MAX_DETAIL = 500;

// Vendor and common names of a reason, lowercased with everything but letters removed.
const REASONS: Record<string, SuppressionReason> = {
  bounce: 'bounce',
  bounces: 'bounce',
  bounced: 'bounce',
  hardbounce: 'bounce',
  invalid: 'bounce',
  invalidemail: 'bounce',
  invalidemails: 'bounce',
  block: 'bounce',
  blocks: 'bounce',
  complaint: 'complaint',
  complaints: 'complaint',
  spamcomplaint: 'complaint',
  spamreport: 'complaint',
  spamreports: 'complaint',
  spam: 'complaint',
  unsubscribe: 'unsubscribe',
  unsubscribes: 'unsubscribe',
  unsubscribed: 'unsubscribe',
  globalunsubscribe: 'unsubscribe',
  groupunsubscribe: 'unsubscribe',
  manual: 'manual',
  manualsuppression: 'manual',
  unregistered: 'unregistered',
};

// Column names, squashed the same way, for each field a line has.
const COLUMNS: Record<string, keyof Line> = {
  address: 'address',
  email: 'address',
  emailaddress: 'address',
  recipient: 'address',
  reason: 'reason',
  suppressionreason: 'reason',
  type: 'reason',
  detail: 'detail',
  details: 'detail',
  description: 'detail',
  origin: 'detail',
  created: 'createdAt',
  createdat: 'createdAt',
  expires: 'expiresAt',
  expiresat: 'expiresAt',
};

const squash = (s: string) => s.toLowerCase().replace(/[^a-z]/g, '');

/** One line of an import, as read, before it is checked. */
interface Line {
  address?: unknown;
  reason?: unknown;
  detail?: unknown;
  createdAt?: unknown;
  expiresAt?: unknown;
}

export interface ImportResult {
  /** Lines read (a CSV's header not counted). */
  lines: number;
  /** Entries added, strengthened or renewed. */
  stored: number;
  /** Lines whose entry was already there as strong (a repeat import, a duplicate line). */
  unchanged: number;
  refused: number;
  /** The first refused lines: line number (1 = the first line of the body) and why. */
  errors: { line: number; message: string }[];
}

/** A time given as ISO 8601 or Unix seconds (SendGrid's `created`), as ISO; undefined when empty, null when not a time. */
function timeOf(v: unknown): string | null | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'number' || (typeof v === 'string' && /^\d{9,11}$/.test(v))) {
    const d = new Date(Number(v) * 1000);
    return Number.isNaN(d.getTime()) ? null : d.toISOString();
  }
  if (typeof v !== 'string') return null;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : new Date(t).toISOString();
}

/** A line as the row to write, or why it is refused. */
function rowOf(
  line: Line,
  scope: ListScope,
  opts: { reason: SuppressionReason; now: string; id: () => string },
): SuppressionsTable | string {
  if (typeof line.address !== 'string' || !line.address.trim()) return 'no address';
  const address = normalizeAddress(line.address);
  if (!isEmailAddress(address) && !WILDCARD.test(address)) return `${JSON.stringify(line.address)} is not an email address or *@domain`;
  let reason = opts.reason;
  let detail = typeof line.detail === 'string' && line.detail.trim() ? line.detail.trim() : null;
  if (line.reason !== undefined && line.reason !== null && line.reason !== '') {
    if (typeof line.reason !== 'string') return 'reason must be text';
    const known = REASONS[squash(line.reason)];
    if (known) reason = known;
    else detail ??= line.reason.trim();
  }
  const createdAt = timeOf(line.createdAt);
  if (createdAt === null) return `created ${JSON.stringify(line.createdAt)} is not a time`;
  const expiresAt = timeOf(line.expiresAt);
  if (expiresAt === null) return `expiresAt ${JSON.stringify(line.expiresAt)} is not a time`;
  if (expiresAt !== undefined && expiresAt <= opts.now) return 'expiresAt is in the past';
  return {
    id: opts.id(),
    workspace_id: scope.workspaceId,
    livemode: flag(scope.livemode),
    address,
    reason,
    detail: detail ? detail.slice(0, MAX_DETAIL) : null,
    message_public_id: null,
    created_at: createdAt && createdAt < opts.now ? createdAt : opts.now,
    expires_at: expiresAt ?? null,
  };
}

// A harder reason than the one there: anything but an unsubscribe replaces an unsubscribe.
const STRENGTH: Record<SuppressionReason, number> = { unsubscribe: 0, manual: 1, unregistered: 1, bounce: 1, complaint: 1 };

/** The lines of a body, numbered: CSV records by their column names, NDJSON lines, or a JSON array's items. */
async function* linesOf(body: Readable, format: TransferFormat, bodyLimit: number): AsyncGenerator<{ n: number; line: Line | string }> {
  if (format === 'csv') {
    let fields: (keyof Line | null)[] | null = null;
    const parser = csvParse().parse({ relax_column_count: true, skip_empty_lines: true, bom: true, info: true, trim: true });
    // pipeline, not pipe: an error of the body (a decoder's) ends the parser, and so the loop, with it.
    pipeline(body, parser, () => {});
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      if (!fields) {
        fields = record.map((name) => COLUMNS[squash(name)] ?? null);
        if (!fields.includes('address')) throw new ImportRefused('the CSV header names no address column (address, email, EmailAddress)');
        continue;
      }
      const line: Line = {};
      record.forEach((v, i) => {
        const f = fields![i];
        if (f && line[f] === undefined) line[f] = v;
      });
      yield { n: info.lines, line };
    }
    return;
  }
  if (format === 'json') {
    // A JSON array is parsed whole: bounded by the body limit, as any JSON body is.
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of body) {
      size += (c as Buffer).length;
      if (size > bodyLimit) throw new ImportRefused('a JSON array import is bounded by the body limit: send NDJSON or CSV for more');
      chunks.push(c as Buffer);
    }
    let items: unknown;
    try {
      items = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new ImportRefused('the body is not valid JSON');
    }
    if (!Array.isArray(items)) throw new ImportRefused('a JSON import is an array of entries');
    for (const [i, item] of items.entries()) yield { n: i + 1, line: entryOf(item) };
    return;
  }
  let n = 0;
  let rest = '';
  for await (const chunk of body.setEncoding('utf8')) {
    const text = rest + (chunk as string);
    let start = 0;
    let nl: number;
    while ((nl = text.indexOf('\n', start)) !== -1) {
      const line = text.slice(start, nl).trim();
      start = nl + 1;
      n++;
      if (line) yield { n, line: parsedLine(line) };
    }
    rest = text.slice(start);
    if (rest.length > 64 * 1024) throw new ImportRefused(`line ${n + 1} is longer than 64 KiB`);
  }
  if (rest.trim()) yield { n: n + 1, line: parsedLine(rest.trim()) };
}

function parsedLine(text: string): Line | string {
  try {
    return entryOf(JSON.parse(text));
  } catch {
    return 'not valid JSON';
  }
}

/** A JSON entry's fields, under Postern's names or a vendor's. */
function entryOf(item: unknown): Line | string {
  if (!item || typeof item !== 'object' || Array.isArray(item)) return 'an entry is a JSON object';
  const line: Line = {};
  for (const [k, v] of Object.entries(item as Record<string, unknown>)) {
    const f = COLUMNS[squash(k)];
    if (f && line[f] === undefined) line[f] = v;
  }
  return line;
}

/** An import refused as a whole (a CSV without an address column, a JSON array over the limit). */
export class ImportRefused extends Error {}

/** Imports a body into the scope's list; see the module's head for what a line does. */
export async function importSuppressions(
  deps: Pick<Deps, 'db' | 'clock' | 'ids'>,
  scope: ListScope,
  body: Readable,
  opts: { format: TransferFormat; reason: SuppressionReason; bodyLimit: number },
): Promise<ImportResult> {
  const result: ImportResult = { lines: 0, stored: 0, unchanged: 0, refused: 0, errors: [] };
  const now = deps.clock.now().toISOString();
  // Within a chunk an address is written once (a statement cannot touch a row twice): the stronger line.
  let chunk = new Map<string, SuppressionsTable>();
  const flush = async () => {
    if (chunk.size === 0) return;
    const rows = [...chunk.values()];
    chunk = new Map();
    const written = await deps.db
      .insertInto('suppressions')
      .values(rows)
      .onConflict((oc) =>
        oc
          .columns(['workspace_id', 'livemode', 'address'])
          .doUpdateSet((eb) => ({
            reason: eb.ref('excluded.reason'),
            detail: eb.ref('excluded.detail'),
            created_at: eb.ref('excluded.created_at'),
            expires_at: eb.ref('excluded.expires_at'),
          }))
          .where((eb) =>
            eb.or([
              eb('suppressions.expires_at', '<=', now),
              eb.and([eb('suppressions.reason', '=', 'unsubscribe'), eb('excluded.reason', '<>', 'unsubscribe')]),
            ]),
          ),
      )
      .returning('address')
      .execute();
    result.stored += written.length;
  };
  for await (const { n, line } of linesOf(body, opts.format, opts.bodyLimit)) {
    result.lines++;
    const row = typeof line === 'string' ? line : rowOf(line, scope, { reason: opts.reason, now, id: () => deps.ids.uuid() });
    if (typeof row === 'string') {
      result.refused++;
      if (result.errors.length < MAX_LISTED) result.errors.push({ line: n, message: row });
      continue;
    }
    const earlier = chunk.get(row.address);
    if (!earlier || STRENGTH[row.reason] > STRENGTH[earlier.reason]) chunk.set(row.address, row);
    if (chunk.size >= CHUNK) await flush();
  }
  await flush();
  result.unchanged = result.lines - result.refused - result.stored;
  return result;
}

const CSV_HEADER = 'address,reason,detail,created_at,expires_at\n';

/** The scope's list as CSV (a header, then one entry per line) or NDJSON, page by page. */
export async function* exportSuppressions(store: SuppressionStore, scope: ListScope, format: 'csv' | 'ndjson'): AsyncGenerator<string> {
  if (format === 'csv') yield CSV_HEADER;
  for await (const page of store.each(scope)) {
    yield page
      .map((s: Suppression) =>
        format === 'csv'
          ? `${[s.address, s.reason, s.detail, s.createdAt, s.expiresAt].map(csvQuote).join(',')}\n`
          : `${JSON.stringify({ address: s.address, reason: s.reason, detail: s.detail, createdAt: s.createdAt, expiresAt: s.expiresAt })}\n`,
      )
      .join('');
  }
}
