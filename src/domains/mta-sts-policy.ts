// The receiving side of MTA-STS (RFC 8461): the policy Postern serves for each custom domain it
// receives for, at `https://mta-sts.<domain>/.well-known/mta-sts.txt`, and the two TXT records that
// go with it (`_mta-sts.<domain>`, the policy's id; `_smtp._tls.<domain>`, where TLS reports go).
// The policy is derived, never stored: its mode is the domain's `mta_sts_mode` (testing until the
// operator says enforce; none withdraws it, §8.3), its one `mx:` is `hostname` (the MX every custom
// domain publishes), its max_age follows the mode. Its id is a hash of its text, so it changes
// exactly when the text does (a mode change, a new hostname) and every cluster node names the same
// id without asking another. The policy is read from the database on each request: a mode set on
// one node is served by all of them at once.
import { createHash } from 'node:crypto';
import type { Deps } from '../deps.js';
import { AppError, notFound } from '../lib/errors.js';
import { REPORT_LOCAL_PART } from '../reports/index.js';
import { bounceDomainOf, normalizeDomain } from './names.js';
import type { MtaStsMode } from '../contract/domains.js';

export const MTA_STS_MODES: readonly MtaStsMode[] = ['testing', 'enforce', 'none'];

/**
 * max_age per mode, in seconds. Enforce: a week, RFC 8461 §3.2's advice of weeks and the common
 * deployments' value, so a sender keeps the promise across a long outage of the policy host.
 * Testing and none: a day, so moving to enforce (or dropping the policy) reaches senders within a day.
 */
const MTA_STS_MAX_AGE: Record<MtaStsMode, number> = { enforce: 604_800, testing: 86_400, none: 86_400 };

/** The host a policy is fetched from. */
export const policyHostOf = (domain: string) => `mta-sts.${domain}`;
/** The policy's URL as a sending MTA fetches it. */
export const policyUrlOf = (domain: string) => `https://${policyHostOf(domain)}/.well-known/mta-sts.txt`;

/** The mailbox TLS reports (RFC 8460) and DMARC aggregate reports come back to (docs/reports.md). */
export const reportAddressOf = (config: Pick<Deps['config'], 'hostname' | 'bounceDomain'>) =>
  `${REPORT_LOCAL_PART}@${bounceDomainOf(config)}`;

export interface ServedPolicy {
  domain: string;
  mode: MtaStsMode;
  mx: string[];
  maxAge: number;
  /** The policy file, lines ended by CRLF (RFC 8461 §3.2). */
  text: string;
  /** What `_mta-sts.<domain>` must publish as id=: 16 hex digits of the text's SHA-256. */
  id: string;
}

/** The policy Postern serves for `domain` in `mode`, naming `hostname` as the one MX. */
export function servedPolicyOf(domain: string, mode: MtaStsMode, hostname: string): ServedPolicy {
  const mx = [normalizeDomain(hostname)];
  const maxAge = MTA_STS_MAX_AGE[mode];
  const text = ['version: STSv1', `mode: ${mode}`, ...mx.map((m) => `mx: ${m}`), `max_age: ${maxAge}`].map((l) => `${l}\r\n`).join('');
  const id = createHash('sha256').update(text).digest('hex').slice(0, 16);
  return { domain, mode, mx, maxAge, text, id };
}

export interface MtaStsRecord {
  type: 'TXT';
  name: string;
  value: string;
  purpose: string;
}

/** The `_mta-sts` and `_smtp._tls` TXT records that go with a served policy. */
export function mtaStsRecordsOf(policy: ServedPolicy, reportAddress: string): MtaStsRecord[] {
  const host = policyHostOf(policy.domain);
  return [
    {
      type: 'TXT',
      name: `_mta-sts.${policy.domain}`,
      value: `v=STSv1; id=${policy.id}`,
      purpose:
        `Announces the MTA-STS policy (mode ${policy.mode}) Postern serves at ${policyUrlOf(policy.domain)}: ` +
        `${host} must resolve to this server, behind HTTPS with a certificate for ${host}; the id changes with the policy; optional`,
    },
    {
      type: 'TXT',
      name: `_smtp._tls.${policy.domain}`,
      value: `v=TLSRPTv1; rua=mailto:${reportAddress}`,
      purpose: `Asks senders to report TLS failures delivering to ${policy.domain} (TLS-RPT) to Postern's report address; optional`,
    },
  ];
}

/** A domain's MTA-STS settings as the CLI shows them. */
export interface MtaStsView {
  domain: string;
  mode: MtaStsMode;
  maxAge: number;
  policyId: string;
  /** Whether the policy is served now (Postern receives for the domain). */
  served: boolean;
  url: string;
  policy: string;
  records: MtaStsRecord[];
}

export interface MtaStsPolicies {
  /** The policy to answer for a request's Host (`mta-sts.<domain>`), or null when Postern serves none there. */
  forHost(host: string): Promise<ServedPolicy | null>;
  /** Every `mta-sts.<domain>` host a policy is served for now (the names its HTTPS certificates cover). */
  servedHosts(): Promise<string[]>;
  /** Sets a custom domain's mode (any live claim; it is served once Postern receives for the domain). */
  setMode(domain: string, mode: string): Promise<MtaStsView>;
}

export function createMtaStsPolicies({ config, db }: Pick<Deps, 'config' | 'db'>): MtaStsPolicies {
  // A live custom domain claim: at most one per name (domain_claimed), failed ones aside.
  const liveCustom = (domain: string) =>
    db
      .selectFrom('domains')
      .select(['domain', 'mta_sts_mode', 'mx_verified_at'])
      .where('domain', '=', domain)
      .where('kind', '=', 'custom')
      .where('deleted_at', 'is', null)
      .where('status', '!=', 'failed')
      .executeTakeFirst();

  return {
    async forHost(host) {
      const name = normalizeDomain(host);
      if (!name.startsWith('mta-sts.')) return null;
      const row = await liveCustom(name.slice('mta-sts.'.length));
      // Served once the MX is confirmed: Postern receives for the domain (inbound/routing.ts).
      if (!row || row.mx_verified_at === null) return null;
      return servedPolicyOf(row.domain, row.mta_sts_mode, config.hostname);
    },

    async servedHosts() {
      const rows = await db
        .selectFrom('domains')
        .select('domain')
        .where('kind', '=', 'custom')
        .where('deleted_at', 'is', null)
        .where('status', '!=', 'failed')
        .where('mx_verified_at', 'is not', null)
        .execute();
      return rows.map((r) => policyHostOf(r.domain));
    },

    async setMode(domain, mode) {
      if (!(MTA_STS_MODES as readonly string[]).includes(mode))
        throw new AppError('invalid_body', `mode must be one of ${MTA_STS_MODES.join(', ')}, not ${mode}`);
      const name = normalizeDomain(domain);
      const row = await liveCustom(name);
      if (!row) throw notFound('custom domain');
      await db
        .updateTable('domains')
        .set({ mta_sts_mode: mode as MtaStsMode })
        .where('domain', '=', name)
        .where('kind', '=', 'custom')
        .where('deleted_at', 'is', null)
        .where('status', '!=', 'failed')
        .execute();
      const policy = servedPolicyOf(row.domain, mode as MtaStsMode, config.hostname);
      return {
        domain: row.domain,
        mode: policy.mode,
        maxAge: policy.maxAge,
        policyId: policy.id,
        served: row.mx_verified_at !== null,
        url: policyUrlOf(row.domain),
        policy: policy.text,
        records: mtaStsRecordsOf(policy, reportAddressOf(config)),
      };
    },
  };
}
