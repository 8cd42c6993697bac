// Certificates on autopilot: every `acme.checkInterval` each node lists the names Postern needs
// (`hostname`, and `mta-sts.<domain>` for each custom domain whose policy it serves), and for each
// one due (none yet, or expiring within `acme.renewBefore`) tries to take its lease; the node that
// takes it asks the CA, the others skip it and serve what the winner stores. A failure is kept
// with its reason and retried with back-off (one minute, doubling, at most `acme.checkInterval`
// times 12), and shows in /readyz's detail, the metrics and the dashboard's Overview; the
// certificate served meanwhile stays the one the name had.
import type { Deps } from '../deps.js';
import { createAcmeIssuer, type AcmeIssuer } from './acme.js';
import type { ServedCertificates } from './serving.js';
import type { CertificateState, CertificateStore } from './store.js';

/** How long a node holds a name while it asks the CA; a node that dies mid-way frees it after this. */
const LEASE_MS = 10 * 60_000;
const FIRST_RETRY_MS = 60_000;

export type CheckOutcome = 'issued' | 'not-due' | 'elsewhere' | 'failed' | 'lost-lease';

export interface CheckResult {
  name: string;
  outcome: CheckOutcome;
  error?: string;
}

export interface CertificateProblem {
  name: string;
  /** `failing`: the last attempts failed (the old certificate, if any, is still served); `expired`: none valid. */
  kind: 'failing' | 'expired';
  failures: number;
  error: string | null;
  notAfter: string | null;
}

export interface Certificates {
  /** The names Postern obtains certificates for now. */
  wanted(): Promise<string[]>;
  /** Obtains what is due (or, with `force`, the names given, due or not); one result per name. */
  check(opts?: { force?: boolean; names?: string[] }): Promise<CheckResult[]>;
  /** Revokes a name's certificate at the CA and drops it: the next check obtains a new one. */
  revoke(name: string): Promise<void>;
  list(): Promise<CertificateState[]>;
  /** Names failing to renew, or without a valid certificate, for /readyz, the metrics and the Overview. */
  problems(): Promise<CertificateProblem[]>;
  /** An HTTP-01 key authorization, by its token (any node answers the CA). */
  challenge(token: string): Promise<string | null>;
  start(): void;
  stop(): Promise<void>;
}

export function createCertificates(
  deps: Pick<Deps, 'config' | 'clock' | 'log'> & {
    store: CertificateStore;
    served: ServedCertificates;
    nodeId: string;
    /** The `mta-sts.<domain>` hosts whose policy Postern serves. */
    policyHosts: () => Promise<string[]>;
    issuer?: AcmeIssuer;
  },
): Certificates {
  const { config, clock, log, store, served } = deps;
  const settings = config.acme;
  const issuer = deps.issuer ?? createAcmeIssuer({ config, store, now: () => clock.now() });
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<unknown> | null = null;

  const wanted = async () => {
    const names = new Set<string>();
    if (isPublicName(config.hostname)) names.add(config.hostname.toLowerCase());
    for (const host of await deps.policyHosts()) names.add(host.toLowerCase());
    return [...names].sort();
  };

  const retryAfter = (failures: number) =>
    Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, failures - 1), Math.max(FIRST_RETRY_MS, settings.checkInterval * 12));

  const obtain = async (name: string, failures: number): Promise<CheckResult> => {
    try {
      const issued = await issuer.issue(name);
      if (!(await store.saveIssued(name, deps.nodeId, issued))) {
        log.warn({ name }, 'certificate obtained after this node lost its lease; another node renews the name');
        return { name, outcome: 'lost-lease' };
      }
      log.info({ name, notAfter: issued.notAfter }, 'certificate obtained');
      await served.reload().catch((err: unknown) => log.warn({ err }, 'reading the certificates failed'));
      return { name, outcome: 'issued' };
    } catch (err) {
      const error = acmeErrorText(err);
      const next = new Date(clock.now().getTime() + retryAfter(failures + 1)).toISOString();
      await store.saveFailure(name, deps.nodeId, error, next);
      log.warn({ err, name, failures: failures + 1, nextAttemptAt: next }, 'obtaining a certificate failed');
      return { name, outcome: 'failed', error };
    }
  };

  const check = async ({ force = false, names }: { force?: boolean; names?: string[] } = {}) => {
    const list = names?.map((n) => n.toLowerCase()) ?? (await wanted());
    await store.want(list);
    const states = new Map((await store.list()).map((s) => [s.name, s]));
    const dueBefore = new Date(clock.now().getTime() + settings.renewBefore).toISOString();
    const results: CheckResult[] = [];
    for (const name of list) {
      const state = states.get(name);
      if (!(await store.claim(name, deps.nodeId, LEASE_MS, { force, dueBefore }))) {
        const due = !state?.notAfter || state.notAfter < dueBefore;
        results.push({ name, outcome: due ? 'elsewhere' : 'not-due' });
        continue;
      }
      results.push(await obtain(name, state?.failures ?? 0));
    }
    return results;
  };

  const tick = () => {
    running = check()
      .catch((err: unknown) => log.warn({ err }, 'checking certificates failed'))
      .finally(() => {
        running = null;
        if (timer) timer = setTimeout(tick, settings.checkInterval).unref();
      });
  };

  return {
    wanted,
    check,
    async revoke(name) {
      const row = (await store.list()).find((s) => s.name === name.toLowerCase());
      if (!row?.cert) throw new Error(`no certificate is kept for ${name}`);
      await issuer.revoke(row.cert);
      await store.forget(row.name);
      log.info({ name: row.name }, 'certificate revoked');
    },
    list: () => store.list(),
    async problems() {
      const now = clock.now().toISOString();
      const want = new Set(await wanted());
      return (await store.list())
        .filter((s) => want.has(s.name))
        .flatMap((s): CertificateProblem[] => {
          const base = { name: s.name, failures: s.failures, error: s.lastError, notAfter: s.notAfter };
          if (s.notAfter !== null && s.notAfter <= now) return [{ ...base, kind: 'expired' }];
          return s.failures > 0 ? [{ ...base, kind: 'failing' }] : [];
        });
    },
    challenge: (token) => store.challenge(token),
    start() {
      if (!settings.enabled) return;
      served.start();
      timer = setTimeout(tick, 0).unref();
    },
    async stop() {
      served.stop();
      if (timer) clearTimeout(timer);
      timer = null;
      await running;
    },
  };
}

/** A name a public CA can issue for: a domain with a dot, not an address and not localhost. */
function isPublicName(name: string): boolean {
  const n = name.toLowerCase();
  return n.includes('.') && !/^[\d.]+$/.test(n) && !n.includes(':') && n !== 'localhost' && !n.endsWith('.localhost');
}

/** The CA's problem document when there is one (acme-client puts its detail in the message). */
function acmeErrorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
