// The link check of a message: every http(s) link of its HTML (a and area hrefs) and of its text
// part is asked for, HEAD first and GET when HEAD fails or is refused (some servers answer HEAD
// with 405 or 404), following redirects by hand. Names resolve through Postern's own resolvers
// (`dns.servers`), and every connection passes the SSRF guard (lib/ssrf.ts) with the checks' own
// policy (`checks.links.allowPrivate`/`allowList`): a message's links are written by a workspace.
// Bounded: at most `max` links, `concurrency` at a time, each request within `timeout`, at most
// `maxBytes` of a GET's body read, at most `maxRedirects` hops. Postern's own tracking and
// unsubscribe URLs are excluded and never asked for: fetching them would count a click or
// unsubscribe the recipient.
import type * as Undici from 'undici';
import type { DnsResolver } from '../../lib/dns.js';
import { lazyRequire } from '../../lib/lazy.js';
import { guardedLookup, isBlockedDestination, literalAddressProblem, refusedReason, type SsrfPolicy } from '../../lib/ssrf.js';

const undici = lazyRequire<typeof Undici>('undici');

export interface LinkSettings {
  max: number;
  concurrency: number;
  timeout: number;
  maxBytes: number;
  maxRedirects: number;
  allowPrivate: boolean;
  allowList: string[];
}

export type LinkVerdict = 'ok' | 'broken' | 'unresolved' | 'refused' | 'error' | 'excluded' | 'skipped';

export interface LinkResult {
  url: string;
  /** Where it was found. */
  in: ('html' | 'text')[];
  verdict: LinkVerdict;
  /** The final answer's status (after redirects). */
  httpStatus?: number;
  /** HEAD, or GET when HEAD failed. */
  method?: 'HEAD' | 'GET';
  /** Where the redirects ended, when they moved the link. */
  finalUrl?: string;
  detail?: string;
}

const decodeEntities = (s: string) =>
  s
    .replace(/&amp;/gi, '&')
    .replace(/&quot;/gi, '"')
    .replace(/&#39;|&apos;/gi, "'")
    .replace(/&lt;/gi, '<')
    .replace(/&gt;/gi, '>');

/** The http(s) links of an HTML body and a text body, in order of first appearance, each once. */
export function linksOf(html: string, text: string): { url: string; in: ('html' | 'text')[] }[] {
  const found = new Map<string, { url: string; in: ('html' | 'text')[] }>();
  const add = (raw: string, where: 'html' | 'text') => {
    let url: string;
    try {
      const u = new URL(raw.trim());
      if (u.protocol !== 'http:' && u.protocol !== 'https:') return;
      url = u.href;
    } catch {
      return;
    }
    const seen = found.get(url);
    if (!seen) found.set(url, { url, in: [where] });
    else if (!seen.in.includes(where)) seen.in.push(where);
  };
  const body = html.replace(/<!--[\s\S]*?-->/g, '');
  for (const m of body.matchAll(/<(?:a|area)\b(?:[^>"']|"[^"]*"|'[^']*')*?\shref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))/gi))
    add(decodeEntities(m[1] ?? m[2] ?? m[3] ?? ''), 'html');
  for (const m of text.matchAll(/https?:\/\/[^\s<>"'()[\]]+/gi)) add(m[0].replace(/[.,;:!?]+$/, ''), 'text');
  return [...found.values()];
}

interface Answer {
  status: number;
  location: string | null;
}

export interface LinkChecker {
  /**
   * Asks for each link. `reuse`: a link asked for in the last ANSWER_TTL_MS takes that answer
   * (automatic checks: a run of test sends with the same links asks each site once, not once per
   * message); without it every link is asked again (on demand: "check again" means again).
   */
  check(
    links: { url: string; in: ('html' | 'text')[] }[],
    excluded: (url: string) => boolean,
    opts?: { reuse?: boolean },
  ): Promise<LinkResult[]>;
  close(): Promise<void>;
}

/** How long an answer is reused by automatic checks, and how many answers are kept. */
export const ANSWER_TTL_MS = 10 * 60_000;
const ANSWERS_KEPT = 10_000;

export function createLinkChecker(deps: { dns: DnsResolver; settings: LinkSettings; now(): number }): LinkChecker {
  const s = deps.settings;
  const answers = new Map<string, { at: number; answer: Omit<LinkResult, 'url' | 'in'> }>();
  const policy: SsrfPolicy = {
    allowPrivate: s.allowPrivate,
    allowList: s.allowList,
    settings: 'checks.links.allowPrivate or checks.links.allowList',
  };
  let agent: Undici.Agent | null = null;
  const dispatcher = () => (agent ??= new (undici().Agent)({ connect: { lookup: guardedLookup(policy, deps.dns), timeout: s.timeout } }));

  async function ask(url: string, method: 'HEAD' | 'GET'): Promise<Answer> {
    const refused = literalAddressProblem(policy, new URL(url));
    if (refused) throw refused;
    const res = await undici().fetch(url, {
      method,
      redirect: 'manual',
      signal: AbortSignal.timeout(s.timeout),
      dispatcher: dispatcher(),
      headers: { 'user-agent': 'Postern link check', accept: '*/*' },
    });
    // Read at most maxBytes of the body, then let go of the connection.
    if (res.body) {
      const reader = res.body.getReader();
      let read = 0;
      try {
        while (read <= s.maxBytes) {
          const { done, value } = await reader.read();
          if (done) break;
          read += value.byteLength;
        }
      } finally {
        await reader.cancel().catch(() => undefined);
      }
    }
    return { status: res.status, location: res.headers.get('location') };
  }

  /** One method along the redirects; throws what the last request threw. */
  async function follow(url: string, method: 'HEAD' | 'GET'): Promise<{ status: number; finalUrl: string; detail?: string }> {
    let current = url;
    for (let hop = 0; ; hop++) {
      const a = await ask(current, method);
      if (a.status >= 300 && a.status < 400 && a.location) {
        if (hop >= s.maxRedirects) return { status: a.status, finalUrl: current, detail: `more than ${s.maxRedirects} redirects` };
        current = new URL(a.location, current).href;
        continue;
      }
      return { status: a.status, finalUrl: current };
    }
  }

  function failure(err: unknown): Pick<LinkResult, 'verdict' | 'detail'> {
    const e = err as Error & { cause?: Error & { code?: string }; code?: string };
    if (isBlockedDestination(err)) return { verdict: 'refused', detail: refusedReason(err) ?? e.message };
    const code = e.cause?.code ?? e.code;
    if (code === 'ENOTFOUND') return { verdict: 'unresolved', detail: `${e.cause?.message ?? e.message}` };
    if (e.name === 'TimeoutError' || code === 'UND_ERR_CONNECT_TIMEOUT')
      return { verdict: 'error', detail: `no answer within ${s.timeout} ms` };
    return { verdict: 'error', detail: e.cause?.message ?? e.message };
  }

  async function one(url: string): Promise<Omit<LinkResult, 'url' | 'in'>> {
    let head: { status: number; finalUrl: string; detail?: string } | null = null;
    try {
      head = await follow(url, 'HEAD');
    } catch (err) {
      const f = failure(err);
      // Neither a name that does not resolve nor a refused address changes with the method.
      if (f.verdict === 'unresolved' || f.verdict === 'refused') return f;
    }
    let answer = head;
    let method: 'HEAD' | 'GET' = 'HEAD';
    if (!head || head.status >= 400) {
      try {
        answer = await follow(url, 'GET');
        method = 'GET';
      } catch (err) {
        if (!head) return { ...failure(err), method: 'GET' };
      }
    }
    const a = answer!;
    const moved = a.finalUrl !== url ? { finalUrl: a.finalUrl } : {};
    if (a.detail) return { verdict: 'broken', httpStatus: a.status, method, ...moved, detail: a.detail };
    return { verdict: a.status < 400 ? 'ok' : 'broken', httpStatus: a.status, method, ...moved };
  }

  return {
    async check(links, excluded, opts = {}) {
      const results: LinkResult[] = links.map((l) => ({ ...l, verdict: 'skipped' }));
      const todo: number[] = [];
      results.forEach((r, i) => {
        if (excluded(r.url)) {
          r.verdict = 'excluded';
          r.detail = "Postern's own tracking or unsubscribe link: asking for it would count a click";
        } else if (todo.length < s.max) todo.push(i);
        else r.detail = `more than ${s.max} links (checks.links.max)`;
      });
      let next = 0;
      const lane = async () => {
        while (next < todo.length) {
          const i = todo[next++];
          const url = results[i].url;
          const kept = answers.get(url);
          let answer = opts.reuse && kept && deps.now() - kept.at < ANSWER_TTL_MS ? kept.answer : null;
          if (!answer) {
            answer = await one(url);
            answers.delete(url);
            answers.set(url, { at: deps.now(), answer });
            if (answers.size > ANSWERS_KEPT) answers.delete(answers.keys().next().value!);
          }
          results[i] = { url, in: results[i].in, ...answer };
        }
      };
      await Promise.all(Array.from({ length: Math.min(s.concurrency, todo.length) }, lane));
      return results;
    },
    async close() {
      await agent?.close();
      agent = null;
    },
  };
}
