// MTA-STS (RFC 8461): a recipient domain's published promise that its MX hosts speak TLS with
// certificates valid for their names. Discovery is the `_mta-sts.<domain>` TXT record
// (`v=STSv1; id=…`); the policy itself is fetched over HTTPS from
// `https://mta-sts.<domain>/.well-known/mta-sts.txt` — certificate verified (the system's CAs plus
// `delivery.tlsCaFile`), no redirects, at most 64 KiB, within `delivery.mtaSts.timeout`.
// A policy is cached for its max_age in the database, so cluster nodes share it and a restart keeps
// it; it is fetched again when the TXT id changes, and a cached policy still binds when the TXT
// record disappears or the fetch fails (RFC 8461 §5.1: that is what defeats a downgrade). With
// neither a TXT record nor a cached policy the domain has no policy. The answer for a domain is
// remembered in memory for a minute, so a bulk send asks DNS once a minute, not once per message.
import type * as Undici from 'undici';
import { lazyRequire } from '../../lib/lazy.js';
import type { Deps } from '../../deps.js';
import { isNoData } from '../../lib/dns.js';
import { guardedLookup, refusedReason, type SsrfPolicy } from '../../lib/ssrf.js';

const undici = lazyRequire<typeof Undici>('undici');

export type StsMode = 'enforce' | 'testing' | 'none';

export interface StsPolicy {
  domain: string;
  id: string;
  mode: StsMode;
  mx: string[];
  maxAge: number;
}

/** What is known of a domain's policy, and what happened finding it (for the timeline). */
export interface StsLookup {
  policy: StsPolicy | null;
  /** A problem on the way (a fetch that failed, a broken record), worth a timeline note. */
  problem?: string;
}

export interface MtaSts {
  lookup(domain: string): Promise<StsLookup>;
}

const MAX_POLICY_BYTES = 64 * 1024;
const MAX_AGE_LIMIT = 31_557_600;
const MEMORY_MS = 60_000;

class StsPolicyError extends Error {}

/** The `_mta-sts` TXT record's id, or null when the domain publishes none (or a broken one). */
export function parseStsRecord(texts: string[]): { id: string } | { problem: string } | null {
  const ours = texts.filter((t) => /^v=STSv1\s*(;|$)/.test(t));
  if (ours.length === 0) return null;
  if (ours.length > 1) return { problem: `${ours.length} _mta-sts records (exactly one is allowed)` };
  const id = /(?:^|;)\s*id=([A-Za-z0-9]{1,32})\s*(;|$)/.exec(ours[0])?.[1];
  return id ? { id } : { problem: `the _mta-sts record has no valid id: ${ours[0]}` };
}

/** Parses a policy body (RFC 8461 §3.2); throws StsPolicyError on anything that is not one. */
export function parseStsPolicy(domain: string, id: string, body: string): StsPolicy {
  const fields = new Map<string, string[]>();
  for (const line of body.split(/\r?\n/)) {
    const m = /^([A-Za-z0-9_]+):[ \t]*(.*?)[ \t]*$/.exec(line);
    if (m) fields.set(m[1].toLowerCase(), [...(fields.get(m[1].toLowerCase()) ?? []), m[2]]);
  }
  const one = (k: string) => fields.get(k)?.[0];
  if (one('version') !== 'STSv1') throw new StsPolicyError(`policy version is ${one('version') ?? 'missing'}, not STSv1`);
  const mode = one('mode');
  if (mode !== 'enforce' && mode !== 'testing' && mode !== 'none') throw new StsPolicyError(`policy mode is ${mode ?? 'missing'}`);
  const age = one('max_age') ?? '';
  if (!/^\d{1,10}$/.test(age) || Number(age) > MAX_AGE_LIMIT) throw new StsPolicyError(`policy max_age is ${age || 'missing'}`);
  const mx = (fields.get('mx') ?? []).map((p) => p.toLowerCase().replace(/\.$/, ''));
  if (mode !== 'none' && mx.length === 0) throw new StsPolicyError('policy lists no mx');
  return { domain, id, mode, mx, maxAge: Number(age) };
}

/** Whether an MX host name matches a policy pattern: exactly, or `*.` standing for one label. */
export function mxMatches(patterns: string[], host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return patterns.some((p) =>
    p.startsWith('*.') ? h.endsWith(p.slice(1)) && !h.slice(0, -(p.length - 1)).includes('.') && h.length > p.length - 1 : h === p,
  );
}

export interface StsFetchDeps extends Pick<Deps, 'dns'> {
  /** `delivery.mtaSts.port`: 443 except in tests. */
  port: number;
  timeoutMs: number;
  /** The certificate authorities a policy host may chain to (system's plus delivery.tlsCaFile), or undefined for the system's. */
  ca?: string[];
  /** Where a policy host may be (`delivery.mtaSts.allowPrivate`, `delivery.mtaSts.allowList`). */
  ssrf: SsrfPolicy;
  /** false: a new connection for each fetch, closed after it (the doctor, which must see DNS as it is now). */
  keepAlive?: boolean;
}

export type MtaStsDeps = StsFetchDeps & Pick<Deps, 'db' | 'clock' | 'log'>;

/** Fetches a domain's policy as a sending MTA does: the policy, or what went wrong, in one line. */
export type StsFetch = (domain: string, id: string) => Promise<{ policy: StsPolicy } | { problem: string }>;

/** The policy fetch on its own: the outbound client's, and `postern doctor`'s look at the policies Postern serves. */
export function createStsFetch(deps: StsFetchDeps): StsFetch {
  // Made at the first policy fetch: undici is loaded only when a policy is fetched (lib/lazy.ts).
  let agent: Undici.Dispatcher | null = null;
  const newAgent = () =>
    new (undici().Agent)({
      connect: {
        // The policy host is named by whoever owns the recipient's domain, and what a fetch met is
        // noted on the sender's timeline: private addresses only with the operator's leave.
        lookup: guardedLookup(deps.ssrf, deps.dns),
        rejectUnauthorized: true,
        ...(deps.ca ? { ca: deps.ca } : {}),
        timeout: deps.timeoutMs,
      },
      headersTimeout: deps.timeoutMs,
      bodyTimeout: deps.timeoutMs,
    });
  async function fetchPolicy(domain: string, id: string): Promise<StsPolicy> {
    if (deps.keepAlive !== false) return fetchWith((agent ??= newAgent()), domain, id);
    const once = newAgent();
    try {
      return await fetchWith(once, domain, id);
    } finally {
      await once.destroy();
    }
  }
  async function fetchWith(dispatcher: Undici.Dispatcher, domain: string, id: string): Promise<StsPolicy> {
    const url = `https://mta-sts.${domain}${deps.port === 443 ? '' : `:${deps.port}`}/.well-known/mta-sts.txt`;
    const res = await undici().request(url, { dispatcher, method: 'GET', signal: AbortSignal.timeout(deps.timeoutMs) });
    try {
      // undici's request() follows no redirect: a 3xx is refused here like any other non-200.
      if (res.statusCode !== 200) throw new StsPolicyError(`${url} answered ${res.statusCode}`);
      const type = String(res.headers['content-type'] ?? '');
      if (!/^text\/plain\b/i.test(type)) throw new StsPolicyError(`${url} is ${type || 'untyped'}, not text/plain`);
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > MAX_POLICY_BYTES) throw new StsPolicyError(`${url} is larger than 64 KiB`);
        chunks.push(chunk as Buffer);
      }
      return parseStsPolicy(domain, id, Buffer.concat(chunks).toString('utf8'));
    } finally {
      // Whatever was not read is dropped; the abort this raises is expected, not an error.
      res.body.on('error', () => {});
      res.body.destroy();
    }
  }

  return async (domain, id) => {
    try {
      return { policy: await fetchPolicy(domain, id) };
    } catch (err) {
      return {
        problem:
          err instanceof StsPolicyError
            ? err.message
            : (refusedReason(err) ?? `fetch failed: ${(err as { code?: string }).code ?? (err as Error).message}`),
      };
    }
  };
}

export function createMtaSts(deps: MtaStsDeps): MtaSts {
  const fetchPolicy = createStsFetch(deps);
  const memory = new Map<string, { at: number; answer: Promise<StsLookup> }>();

  async function cached(domain: string): Promise<StsPolicy | null> {
    const row = await deps.db.selectFrom('mta_sts_policies').selectAll().where('domain', '=', domain).executeTakeFirst();
    if (!row || row.expires_at <= deps.clock.now().toISOString()) return null;
    return { domain, id: row.policy_id, mode: row.mode, mx: JSON.parse(row.mx) as string[], maxAge: row.max_age };
  }

  async function store(p: StsPolicy): Promise<void> {
    const now = deps.clock.now();
    const row = {
      policy_id: p.id,
      mode: p.mode,
      mx: JSON.stringify(p.mx),
      max_age: p.maxAge,
      fetched_at: now.toISOString(),
      expires_at: new Date(now.getTime() + p.maxAge * 1000).toISOString(),
    };
    await deps.db
      .insertInto('mta_sts_policies')
      .values({ domain: p.domain, ...row })
      .onConflict((oc) => oc.column('domain').doUpdateSet(row))
      .execute();
  }

  async function discover(domain: string): Promise<StsLookup> {
    let record: ReturnType<typeof parseStsRecord>;
    try {
      record = parseStsRecord((await deps.dns.resolveTxt(`_mta-sts.${domain}`)).map((parts) => parts.join('')));
    } catch (err) {
      const policy = await cached(domain);
      if (isNoData(err)) return { policy };
      return { policy, problem: `MTA-STS: _mta-sts.${domain} TXT lookup failed (${(err as { code?: string }).code ?? String(err)})` };
    }
    const known = await cached(domain);
    if (record === null) return { policy: known };
    if ('problem' in record) return { policy: known, problem: `MTA-STS: ${record.problem}` };
    if (known && known.id === record.id) return { policy: known };
    const fetched = await fetchPolicy(domain, record.id);
    if ('problem' in fetched) {
      deps.log.warn({ domain, err: fetched.problem }, 'MTA-STS policy not refreshed');
      const note = known ? '; the cached policy applies' : '';
      return { policy: known, problem: `MTA-STS policy of ${domain} not fetched (${fetched.problem})${note}` };
    }
    const { policy } = fetched;
    await store(policy);
    deps.log.info({ domain, mode: policy.mode, id: policy.id, maxAge: policy.maxAge }, 'MTA-STS policy fetched');
    return { policy };
  }

  return {
    lookup(domain) {
      const now = deps.clock.now().getTime();
      const hit = memory.get(domain);
      if (hit && now - hit.at < MEMORY_MS) return hit.answer;
      const answer = discover(domain);
      memory.set(domain, { at: now, answer });
      if (memory.size > 10_000) memory.delete(memory.keys().next().value!);
      // A lookup that threw (the database) is not remembered; a failed fetch is, for the minute,
      // so a domain with a broken policy host is not asked once per message.
      answer.catch(() => memory.delete(domain));
      return answer;
    },
  };
}
