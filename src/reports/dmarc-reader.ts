// A DMARC aggregate report read as a stream. A large report (tens of MB of XML) must never be held
// whole, nor as one object per record: the reader is fed the document a piece at a time, keeps only
// the element path, the text of the element open now and the record being read, and hands out the
// records that closed since it was last asked. The head of the report (report_metadata and
// policy_published, which the schema puts before the records) is ready when the first record opens,
// so a duplicate is recognised before any record is read.
//
// It reads what the whole-document parser read before it (the property test holds it to that):
// namespaces dropped so both schemas read alike, values trimmed and lowercased where the schema
// names a fixed vocabulary, entities left as written and never expanded (a document that declares
// any is refused), and a document that breaks (cut short, or malformed part way) keeps the records
// that closed before the break. A record before the head is refused: the schema orders them.
import type { DmarcHead, DmarcRecord } from './dmarc.js';
import { ReportRefused } from './unpack.js';

const ROOT = 'feedback';
const RECORD = 'feedback/record';
const DMARC_2 = /\burn:ietf:params:xml:ns:dmarc-2\.0\b/;
const NAME = /^[^\s/>"'=<]+/;

interface Auth {
  [field: string]: string;
}

/** The record being read: its leaf values by path below the record, and its auth results. */
interface RecordState {
  values: Map<string, string>;
  dkim: Auth[];
  spf: Auth[];
  reasons: Auth[];
}

export class DmarcReader {
  private buf = '';
  /** Open elements: their qualified names (to match end tags) and their paths of local names. */
  private readonly qnames: string[] = [];
  private readonly paths: string[] = [];
  private text = '';
  private schema: DmarcHead['schema'] = 'rfc7489';
  /** Leaf values of report_metadata and policy_published, by path. */
  private readonly headValues = new Map<string, string>();
  private headRead: DmarcHead | null = null;
  private rec: RecordState | null = null;
  private ready: DmarcRecord[] = [];
  private closedRecords = 0;
  private finished = false;
  private ended = false;
  /** The head was just read: nothing more is read until resume(). */
  private holding = false;
  /** The document broke after whole records, which are kept. */
  partial = false;

  /** The head, once the first record opened (or the document ended without records). */
  get head(): DmarcHead | null {
    return this.headRead;
  }

  /** Whether the document is read to its end (or to a break after whole records). */
  get done(): boolean {
    return this.finished;
  }

  /** The records that closed since the last call. */
  take(): DmarcRecord[] {
    const out = this.ready;
    this.ready = [];
    return out;
  }

  /** The next piece of the document. Throws ReportRefused when the document cannot be a report. */
  feed(piece: string): void {
    if (this.finished) return;
    this.buf = this.buf.length ? this.buf + piece : piece;
    if (!this.holding) this.scan(false);
  }

  /** The document ended. */
  end(): void {
    if (this.finished) return;
    this.ended = true;
    if (!this.holding) this.finish();
  }

  /**
   * Reads on past the head. Reading stops once the head is read, before anything after it, so that
   * a duplicate is known whatever follows (even a document that breaks there).
   */
  resume(): void {
    if (!this.holding) return;
    this.holding = false;
    if (this.ended) this.finish();
    else this.scan(false);
  }

  private finish(): void {
    this.scan(true);
    if (!this.finished && !this.holding) this.broken('the document ends before </feedback>');
  }

  private scan(final: boolean): void {
    const b = this.buf;
    let i = 0;
    while (!this.finished && !this.holding) {
      const lt = b.indexOf('<', i);
      if (lt === -1) {
        this.addText(b.slice(i));
        i = b.length;
        break;
      }
      if (lt > i) this.addText(b.slice(i, lt));
      i = lt;
      if (b.startsWith('<!--', i)) {
        const e = b.indexOf('-->', i + 4);
        if (e === -1) break;
        i = e + 3;
      } else if (b.startsWith('<![CDATA[', i)) {
        const e = b.indexOf(']]>', i + 9);
        if (e === -1) break;
        this.addText(b.slice(i + 9, e));
        i = e + 3;
      } else if (b.startsWith('<?', i)) {
        const e = b.indexOf('?>', i + 2);
        if (e === -1) break;
        i = e + 2;
      } else if (b.startsWith('<!', i)) {
        // Not yet enough to tell a comment or CDATA from a declaration.
        if (b.length - i < 9 && !final) break;
        const e = declarationEnd(b, i);
        if (e === -1) break;
        const decl = b.slice(i, e);
        if (/<!ENTITY/i.test(decl)) throw new ReportRefused('corrupt', 'the document declares entities; they are never expanded');
        if (!/^<!DOCTYPE\b/i.test(decl) || this.qnames.length > 0) return this.broken(`unexpected ${decl.slice(0, 20)}`);
        i = e;
      } else {
        const gt = tagEnd(b, i + 1);
        if (gt === -1) break;
        const tag = b.slice(i + 1, gt);
        i = gt + 1;
        if (tag.startsWith('/')) this.close(tag.slice(1).trim());
        else this.open(tag);
      }
    }
    this.buf = this.finished ? '' : b.slice(i);
  }

  private addText(s: string): void {
    if (this.qnames.length > 0) this.text += s;
    else if (s.trim()) this.broken('text outside the root element');
  }

  private open(tag: string): void {
    const selfClosing = tag.endsWith('/');
    const qname = NAME.exec(tag)?.[0];
    if (!qname) return this.broken(`a tag without a name: <${tag.slice(0, 20)}`);
    const local = qname.slice(qname.indexOf(':') + 1);
    let path: string;
    if (this.qnames.length === 0) {
      if (local !== ROOT) throw new ReportRefused('not-a-report', 'no <feedback> root: not a DMARC aggregate report');
      if (DMARC_2.test(tag)) this.schema = 'rfc9990';
      path = ROOT;
    } else path = `${this.paths[this.paths.length - 1]}/${local}`;
    this.qnames.push(qname);
    this.paths.push(path);
    this.text = '';
    if (path === RECORD) {
      this.readHead();
      this.rec = { values: new Map(), dkim: [], spf: [], reasons: [] };
    } else if (this.rec) {
      if (path === 'feedback/record/auth_results/dkim') this.rec.dkim.push({});
      else if (path === 'feedback/record/auth_results/spf') this.rec.spf.push({});
      else if (path === 'feedback/record/row/policy_evaluated/reason') this.rec.reasons.push({});
    }
    if (selfClosing) this.close(qname);
  }

  private close(qname: string): void {
    const top = this.qnames.length - 1;
    if (top < 0 || this.qnames[top] !== qname) return this.broken(`</${qname.slice(0, 40)}> closes nothing open`);
    const path = this.paths[top];
    const value = this.text.trim();
    this.qnames.pop();
    this.paths.pop();
    this.text = '';
    if (this.rec && path.startsWith('feedback/record/')) this.recordValue(this.rec, path.slice(16), value);
    else if (path.startsWith('feedback/report_metadata/') || path.startsWith('feedback/policy_published/')) setOnce(this.headValues, path, value);
    else if (path === RECORD) {
      this.closedRecords++;
      const record = finishRecord(this.rec!, this.headRead!.domain);
      this.rec = null;
      if (record) this.ready.push(record);
    } else if (path === ROOT) {
      this.readHead();
      this.finished = true;
    }
  }

  private recordValue(rec: RecordState, sub: string, value: string): void {
    const slash = sub.lastIndexOf('/');
    const parent = sub.slice(0, slash);
    const field = sub.slice(slash + 1);
    const list =
      parent === 'auth_results/dkim'
        ? rec.dkim
        : parent === 'auth_results/spf'
          ? rec.spf
          : parent === 'row/policy_evaluated/reason'
            ? rec.reasons
            : null;
    if (list) {
      const entry = list[list.length - 1];
      entry[field] = field in entry ? '' : value;
    } else setOnce(rec.values, sub, value);
  }

  /** The head from what report_metadata and policy_published said; refused when it names no report. */
  private readHead(): void {
    if (this.headRead) return;
    this.holding = true;
    const v = (p: string) => this.headValues.get(p) ?? '';
    const meta = (f: string) => v(`feedback/report_metadata/${f}`);
    const published = (f: string) => v(`feedback/policy_published/${f}`);
    const domain = published('domain').toLowerCase();
    if (!domain) throw new ReportRefused('not-a-report', 'policy_published names no domain (before the records)');
    const reportId = meta('report_id');
    const org = meta('org_name');
    if (!reportId || !org) throw new ReportRefused('not-a-report', 'report_metadata lacks org_name or report_id (before the records)');
    const pct = published('pct');
    this.headRead = {
      schema: this.schema,
      org,
      email: meta('email') || null,
      reportId,
      begin: epoch(meta('date_range/begin'), 'begin'),
      end: epoch(meta('date_range/end'), 'end'),
      domain,
      policy: {
        p: published('p').toLowerCase() || 'none',
        sp: published('sp').toLowerCase() || null,
        np: published('np').toLowerCase() || null,
        adkim: published('adkim').toLowerCase() || 'r',
        aspf: published('aspf').toLowerCase() || 'r',
        pct: /^\d+$/.test(pct) ? Number(pct) : null,
        testing: published('testing').toLowerCase() === 'y',
      },
    };
  }

  private broken(why: string): void {
    if (this.headRead && this.closedRecords > 0) {
      this.partial = true;
      this.finished = true;
      this.rec = null;
      return;
    }
    throw new ReportRefused('corrupt', `not well-formed XML, and no whole record to keep (${why})`);
  }
}

/** A value given twice reads as none, as the whole-document parser read it (a list, not a text). */
function setOnce(map: Map<string, string>, key: string, value: string): void {
  map.set(key, map.has(key) ? '' : value);
}

function epoch(s: string, what: string): Date {
  if (!/^\d{1,12}$/.test(s)) throw new ReportRefused('corrupt', `date_range ${what} is not a Unix time: ${s.slice(0, 40)}`);
  return new Date(Number(s) * 1000);
}

const passFail = (v: string | undefined): 'pass' | 'fail' => (v?.toLowerCase() === 'pass' ? 'pass' : 'fail');

/** The record as stored, or null when it names no source or no count. */
function finishRecord(rec: RecordState, domain: string): DmarcRecord | null {
  const v = (p: string) => rec.values.get(p) ?? '';
  const lower = (p: string) => v(p).toLowerCase();
  const count = Number(v('row/count'));
  const sourceIp = lower('row/source_ip');
  if (!sourceIp || !Number.isSafeInteger(count) || count < 0) return null;
  return {
    sourceIp,
    count,
    disposition: lower('row/policy_evaluated/disposition') || 'none',
    dkim: passFail(v('row/policy_evaluated/dkim')),
    spf: passFail(v('row/policy_evaluated/spf')),
    headerFrom: lower('identifiers/header_from') || domain,
    envelopeFrom: lower('identifiers/envelope_from') || null,
    dkimResults: rec.dkim.map((d) => ({
      domain: (d.domain ?? '').toLowerCase(),
      selector: d.selector || null,
      result: (d.result ?? '').toLowerCase(),
    })),
    spfResults: rec.spf.map((s) => ({
      domain: (s.domain ?? '').toLowerCase(),
      scope: (s.scope ?? '').toLowerCase() || null,
      result: (s.result ?? '').toLowerCase(),
    })),
    reasons: rec.reasons.map((r) => (r.type ?? '').toLowerCase()).filter(Boolean),
  };
}

/** Where a start tag's `>` is, skipping quoted attribute values; -1 when it has not arrived yet. */
function tagEnd(b: string, from: number): number {
  let quote = '';
  for (let i = from; i < b.length; i++) {
    const c = b[i];
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '>') return i;
  }
  return -1;
}

/** The end (past `>`) of a `<!…>` declaration, with its internal subset in brackets; -1 when not arrived. */
function declarationEnd(b: string, from: number): number {
  let depth = 0;
  for (let i = from + 2; i < b.length; i++) {
    const c = b[i];
    if (c === '[') depth++;
    else if (c === ']') depth--;
    else if (c === '>' && depth <= 0) return i + 1;
  }
  return -1;
}
