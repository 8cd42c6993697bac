// `postern doctor` and `GET /v1/inbound/domains/{id}/checks`: everything a receiving mail server
// judges, looked up live through the daemon's resolver, each as pass / warn / fail with the record
// that fixes it (docs/doctor.md). Two kinds of checks:
//   - the host's, shared by every domain: the public addresses' forward-confirmed reverse DNS, the
//     SMTP certificate, and the bounce domain's MX and SPF (the envelope sender is the bounce domain);
//   - each claimed custom domain's: MX, SPF, DKIM, DMARC, MTA-STS and TLS-RPT. For a domain Postern
//     receives for, the MTA-STS policy is Postern's own (mta-sts-policy.ts): the doctor fetches it
//     as a sending MTA does and holds it, the TXT id and the MX certificate to what is served.
// Fixes reuse the values the claim lists (publishedRecordsOf), so the doctor and the API name the
// same record. Nothing here writes: a lookup that fails decides nothing and is a warn.
import { X509Certificate } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { DomainsTable } from '../db/index.js';
import type { Deps } from '../deps.js';
import { isNoData, reverseName } from '../lib/dns.js';

export { reverseName };
import { notFound } from '../lib/errors.js';
import { dkimRecordMatches } from './dkim-keys.js';
import { publishedRecordsOf } from './domains.js';
import { policyHostOf, policyUrlOf, reportAddressOf, servedPolicyOf } from './mta-sts-policy.js';
import { bounceDomainOf, boxSpfRecord, normalizeDomain, returnPathOf } from './names.js';
import { countSpfLookups, SPF_LOOKUP_LIMIT, spfRecordsAt, spfVerdict, withAddresses } from './spf-check.js';

export type CheckStatus = 'pass' | 'warn' | 'fail';

export interface Check {
  /** mx, spf, dkim, dmarc, mta-sts, tls-rpt; host: public-addresses, fcrdns, source:<name>, certificate, bounce-mx, bounce-spf. */
  name: string;
  status: CheckStatus;
  detail: string;
  /** The record to publish (or correct) to make the check pass. */
  fix?: { type: string; name: string; value: string };
}

export interface DomainChecks {
  id: string;
  domain: string;
  /** The slug of the workspace that claimed it. */
  workspace: string;
  /** The worst status among `checks`. */
  status: CheckStatus;
  checks: Check[];
}

export interface DoctorReport {
  /** The worst status of every check below. */
  status: CheckStatus;
  host: Check[];
  domains: DomainChecks[];
}

/** The SMTP listener's certificate as PEM, and whether the operator configured it (else it is the generated self-signed one). */
export type CertificateSource = () => { pem: string; configured: boolean } | null;

export interface Doctor {
  /** The host's checks and every claimed custom domain's (only `domain` when given; unknown: not_found). */
  run(opts?: { domain?: string }): Promise<DoctorReport>;
  /** One domain of a workspace with the host's checks (the API); the shared domain has only its MX check. */
  domain(workspaceId: string, id: string): Promise<DomainChecks & { host: Check[] }>;
}

/** A policy fetched as a sending MTA fetches it (channels/email/mta-sts.ts), or why it could not be. */
export type PolicyFetch = (
  domain: string,
  id: string,
) => Promise<{ policy: { mode: string; mx: string[]; maxAge: number } } | { problem: string }>;

export interface DoctorDeps extends Pick<Deps, 'config' | 'db' | 'dns' | 'clock'> {
  certificate: CertificateSource;
  fetchPolicy: PolicyFetch;
}

/** A certificate expiring sooner than this warns. */
const EXPIRY_WARNING_MS = 14 * 24 * 3600 * 1000;

const RANK: Record<CheckStatus, number> = { pass: 0, warn: 1, fail: 2 };
/** The worst of several statuses (pass when there are none). */
const worst = (checks: Check[]): CheckStatus => checks.reduce<CheckStatus>((w, c) => (RANK[c.status] > RANK[w] ? c.status : w), 'pass');

const codeOf = (err: unknown) => (err as { code?: string })?.code ?? String(err);

/** The answer, [] for "no such record", null for a lookup that failed. */
async function ask<T>(lookup: () => Promise<T[]>): Promise<T[] | null> {
  try {
    return await lookup();
  } catch (err) {
    return isNoData(err) ? [] : null;
  }
}

/** `tag=value` pairs of a DMARC, MTA-STS or TLS-RPT record, tags lowercased. */
function tagsOf(record: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of record.split(';')) {
    const at = part.indexOf('=');
    if (at > 0) tags.set(part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).trim());
  }
  return tags;
}

type Row = Pick<
  Selectable<DomainsTable>,
  | 'id'
  | 'domain'
  | 'kind'
  | 'workspace_id'
  | 'dkim_selector'
  | 'dkim_public_key'
  | 'mx_verified_at'
  | 'dkim_verified_at'
  | 'return_path_verified_at'
  | 'records_drift'
  | 'mta_sts_mode'
>;

export function createDoctor({ config, db, dns, clock, certificate, fetchPolicy }: DoctorDeps): Doctor {
  const hostname = normalizeDomain(config.hostname);
  const hostnameOfBox = hostname;
  const publicIps = config.doctor.publicIps;
  const bounceDomain = bounceDomainOf(config);
  const reportAddress = reportAddressOf(config);
  const defaultSpf = () => boxSpfRecord(hostname, publicIps);

  // MX: `receives` says whether Postern is meant to receive for the name (a confirmed MX, the
  // bounce domain, the shared domain); a send-only domain may keep its MX elsewhere.
  async function mxCheck(name: string, domain: string, receives: boolean, sendsOnly: boolean): Promise<Check> {
    const fix = { type: 'MX', name: domain, value: `10 ${hostname}` };
    const mx = await ask(() => dns.resolveMx(domain));
    if (mx === null) return { name, status: 'warn', detail: `the MX lookup of ${domain} failed; try again` };
    const hosts = mx.map((m) => normalizeDomain(m.exchange));
    if (hosts.includes(hostname)) return { name, status: 'pass', detail: `${domain} MX points at ${hostname}` };
    const found = hosts.length ? `its MX points at ${hosts.join(', ')}` : 'it has no MX record';
    if (sendsOnly) return { name, status: 'pass', detail: `${domain} only sends through Postern: ${found}` };
    return {
      name,
      status: receives ? 'fail' : 'warn',
      detail: `${found}, not at ${hostname}: ${receives ? 'mail for it does not reach Postern' : 'Postern does not receive for it yet'}`,
      fix,
    };
  }

  async function spfCheck(name: string, domain: string): Promise<Check> {
    let records: string[];
    try {
      records = await spfRecordsAt(dns, domain);
    } catch (err) {
      return { name, status: 'warn', detail: `the TXT lookup of ${domain} failed (${codeOf(err)}); try again` };
    }
    if (records.length === 0)
      return { name, status: 'fail', detail: `${domain} publishes no SPF record`, fix: { type: 'TXT', name: domain, value: defaultSpf() } };
    if (records.length > 1)
      return {
        name,
        status: 'fail',
        detail: `${domain} publishes ${records.length} SPF records; receivers treat that as a permanent error: merge them into one`,
      };
    const record = records[0];
    const lookups = await countSpfLookups(dns, record);
    const notes = lookups.notes.length ? ` (${lookups.notes.join('; ')})` : '';
    if (lookups.count > SPF_LOOKUP_LIMIT)
      return {
        name,
        status: 'fail',
        detail: `"${record}" needs ${lookups.count} DNS lookups, more than the ${SPF_LOOKUP_LIMIT} receivers allow: replace includes with ip4:/ip6: ranges${notes}`,
      };
    const cost = `${lookups.count} of ${SPF_LOOKUP_LIMIT} lookups${notes}`;
    if (publicIps.length === 0)
      return {
        name,
        status: 'warn',
        detail: `"${record}" (${cost}); doctor.publicIps is empty, so which addresses it authorises is not checked`,
      };
    const verdicts = await Promise.all(publicIps.map(async (ip) => ({ ip, verdict: await spfVerdict(dns, domain, ip, hostname) })));
    const refused = verdicts.filter((v) => v.verdict !== 'pass');
    if (refused.length === 0) return { name, status: 'pass', detail: `"${record}" authorises ${publicIps.join(', ')} (${cost})` };
    const temp = refused.every((v) => v.verdict === 'temperror');
    return {
      name,
      status: temp ? 'warn' : 'fail',
      detail: `"${record}" does not authorise ${refused.map((v) => `${v.ip} (${v.verdict})`).join(', ')} (${cost})`,
      ...(temp
        ? {}
        : {
            fix: {
              type: 'TXT',
              name: domain,
              value: withAddresses(
                record,
                refused.map((v) => v.ip),
              ),
            },
          }),
    };
  }

  async function dkimCheck(row: Row): Promise<Check> {
    const name = 'dkim';
    const expected = publishedRecordsOf(row, hostname).dkim;
    const fix = { type: 'TXT', name: expected.name, value: expected.value };
    const txt = await ask(() => dns.resolveTxt(expected.name));
    if (txt === null) return { name, status: 'warn', detail: `the TXT lookup of ${expected.name} failed; try again` };
    const values = txt.map((chunks) => chunks.join(''));
    if (values.some((v) => dkimRecordMatches(v, row.dkim_public_key ?? '')))
      return { name, status: 'pass', detail: `${expected.name} publishes the key Postern signs with` };
    if (values.length === 0) return { name, status: 'fail', detail: `${expected.name} publishes no DKIM record`, fix };
    return { name, status: 'fail', detail: `${expected.name} publishes another key than the one Postern signs with`, fix };
  }

  // DMARC at the domain, else at each parent (the organizational domain's policy applies, as sp=).
  // Postern signs with d= the From domain, so DKIM is aligned in relaxed and strict mode alike;
  // SPF is aligned only when the bounce domain sits under the domain (relaxed) or is it (strict).
  async function dmarcCheck(domain: string, dkimPasses: boolean, envelopeDomain: string): Promise<Check> {
    const name = 'dmarc';
    // Aggregate reports come back to Postern's report address (docs/reports.md).
    const fix = { type: 'TXT', name: `_dmarc.${domain}`, value: `v=DMARC1; p=none; rua=mailto:${reportAddress}` };
    const labels = domain.split('.');
    for (let i = 0; i <= labels.length - 2; i++) {
      const at = labels.slice(i).join('.');
      const txt = await ask(() => dns.resolveTxt(`_dmarc.${at}`));
      if (txt === null) return { name, status: 'warn', detail: `the TXT lookup of _dmarc.${at} failed; try again` };
      const records = txt.map((c) => c.join('')).filter((v) => /^v=DMARC1\s*(;|$)/i.test(v.trim()));
      if (records.length === 0) continue;
      if (records.length > 1)
        return { name, status: 'fail', detail: `_dmarc.${at} publishes ${records.length} DMARC records: keep one`, fix };
      const tags = tagsOf(records[0]);
      const policy = (i > 0 && tags.get('sp')) || tags.get('p');
      if (!policy || !['none', 'quarantine', 'reject'].includes(policy.toLowerCase()))
        return { name, status: 'fail', detail: `"${records[0]}" at _dmarc.${at} has no valid p= policy`, fix };
      const spfAligned =
        tags.get('aspf')?.toLowerCase() === 's'
          ? envelopeDomain === domain
          : envelopeDomain === domain || envelopeDomain.endsWith('.' + at);
      const where = i > 0 ? ` (inherited from _dmarc.${at})` : '';
      const spfNote = spfAligned
        ? `SPF aligned too (envelope sender on ${envelopeDomain})`
        : `SPF not aligned (envelope sender on ${envelopeDomain}; publish the return path ${returnPathOf(domain)} to align it)`;
      if (!dkimPasses)
        return {
          name,
          status: 'fail',
          detail: `p=${policy}${where}, but DKIM is not published, so mail from ${domain} does not pass DMARC; ${spfNote}`,
        };
      const reports = (tags.get('rua') ?? '').toLowerCase().includes(`mailto:${reportAddress}`)
        ? `aggregate reports come to Postern`
        : `add mailto:${reportAddress} to rua= to read the aggregate reports in Postern`;
      return { name, status: 'pass', detail: `p=${policy}${where}; aligned through DKIM (d=${domain}); ${spfNote}; ${reports}` };
    }
    return { name, status: 'fail', detail: `no DMARC record at _dmarc.${domain}; large receivers require one from bulk senders`, fix };
  }

  // MTA-STS and TLS-RPT are optional: not published passes; published must parse. (For a domain
  // Postern receives for, servedStsCheck below judges MTA-STS instead.)
  async function optionalTxt(
    name: string,
    at: string,
    version: RegExp,
    valid: (tags: Map<string, string>) => string | null,
    fix: string,
  ): Promise<Check> {
    const txt = await ask(() => dns.resolveTxt(at));
    if (txt === null) return { name, status: 'warn', detail: `the TXT lookup of ${at} failed; try again` };
    const records = txt.map((c) => c.join('')).filter((v) => version.test(v.trim()));
    if (records.length === 0) return { name, status: 'pass', detail: `not published at ${at} (optional)` };
    const problem = records.length > 1 ? `${records.length} records are published: keep one` : valid(tagsOf(records[0]));
    if (problem)
      return { name, status: 'fail', detail: `"${records[0]}" at ${at}: ${problem}`, fix: { type: 'TXT', name: at, value: fix } };
    return { name, status: 'pass', detail: `"${records[0]}" at ${at}` };
  }

  const mtaSts = (domain: string) =>
    optionalTxt(
      'mta-sts',
      `_mta-sts.${domain}`,
      /^v=STSv1\s*(;|$)/,
      (tags) => (/^[A-Za-z0-9]{1,32}$/.test(tags.get('id') ?? '') ? null : 'id= must be 1 to 32 letters and digits'),
      `v=STSv1; id=${clock.now().toISOString().replace(/\D/g, '').slice(0, 14)}`,
    );

  // MTA-STS of a domain Postern receives for: the policy is the one Postern serves, so the TXT id must
  // be its id, the policy fetched over HTTPS as a sender fetches it must be it, its mx: must cover
  // every MX host the domain publishes, and the MX certificate must satisfy it: name `hostname` and
  // chain to a public CA (the host's `certificate` check). Enforce makes each gap a failure; testing,
  // a warning (senders only report).
  async function servedStsCheck(row: Row, cert: Check): Promise<Check> {
    const name = 'mta-sts';
    const served = servedPolicyOf(row.domain, row.mta_sts_mode, hostname);
    const at = `_mta-sts.${row.domain}`;
    const url = policyUrlOf(row.domain);
    const fix = { type: 'TXT', name: at, value: `v=STSv1; id=${served.id}` };
    const [txt, mx] = await Promise.all([ask(() => dns.resolveTxt(at)), ask(() => dns.resolveMx(row.domain))]);
    if (txt === null) return { name, status: 'warn', detail: `the TXT lookup of ${at} failed; try again` };
    const records = txt.map((c) => c.join('')).filter((v) => /^v=STSv1\s*(;|$)/.test(v.trim()));
    if (records.length === 0)
      return {
        name,
        status: 'pass',
        detail: `not published at ${at} (optional): Postern serves a ${served.mode} policy at ${url}; once ${policyHostOf(row.domain)} reaches it over HTTPS, publish "${fix.value}"`,
      };
    if (records.length > 1) return { name, status: 'fail', detail: `${records.length} records are published at ${at}: keep one`, fix };
    const id = tagsOf(records[0]).get('id') ?? '';
    if (id !== served.id)
      return {
        name,
        status: 'fail',
        detail: `"${records[0]}" at ${at}, but the policy Postern serves has id ${served.id}: a sender that holds an older policy does not fetch this one`,
        fix,
      };
    const fetched = await fetchPolicy(row.domain, served.id);
    if ('problem' in fetched)
      return {
        name,
        status: 'fail',
        detail: `${at} is published, but ${url} cannot be fetched as senders fetch it (${fetched.problem}): ${policyHostOf(row.domain)} must resolve to a TLS-terminating proxy with a certificate for it that passes requests to Postern's HTTP listener`,
      };
    const got = fetched.policy;
    const describe = (p: { mode: string; mx: string[]; maxAge: number }) => `mode ${p.mode}, mx ${p.mx.join(', ')}, max_age ${p.maxAge}`;
    if (got.mode !== served.mode || got.maxAge !== served.maxAge || got.mx.join(',') !== served.mx.join(','))
      return {
        name,
        status: 'fail',
        detail: `${url} serves ${describe(got)}, not the policy Postern serves (${describe(served)}): ${policyHostOf(row.domain)} reaches another server`,
      };
    const policyHolds = `"${records[0]}" at ${at}; ${url} serves Postern's policy (${describe(served)})`;
    if (served.mode === 'none') return { name, status: 'pass', detail: `${policyHolds}: the policy is withdrawn` };
    const strict = served.mode === 'enforce';
    const outcome = strict ? 'senders that enforce it refuse to deliver' : 'senders report each failure (TLS-RPT) and deliver anyway';
    const uncovered = (mx ?? []).map((m) => normalizeDomain(m.exchange)).filter((h) => h !== '' && !served.mx.includes(h));
    if (uncovered.length)
      return {
        name,
        status: strict ? 'fail' : 'warn',
        detail: `${policyHolds}, but its mx: does not cover ${uncovered.join(', ')}, also an MX of ${row.domain}: ${outcome} there`,
      };
    if (cert.status !== 'pass')
      return {
        name,
        status: strict ? 'fail' : 'warn',
        detail: `${policyHolds}, but the MX certificate does not meet it (certificate check: ${cert.detail}): ${outcome}`,
      };
    return { name, status: 'pass', detail: `${policyHolds}; the MX certificate names ${hostname} (certificate check)` };
  }

  const tlsRpt = (domain: string) =>
    optionalTxt(
      'tls-rpt',
      `_smtp._tls.${domain}`,
      /^v=TLSRPTv1\s*(;|$)/,
      (tags) => {
        const rua = tags.get('rua');
        if (!rua) return 'rua= is missing';
        const bad = rua.split(',').filter((u) => !/^(mailto:[^@\s]+@[^@\s]+|https:\/\/\S+)$/i.test(u.trim()));
        return bad.length ? `rua= must list mailto: or https: addresses, not ${bad.join(', ')}` : null;
      },
      `v=TLSRPTv1; rua=mailto:${reportAddress}`,
    );

  async function domainChecks(row: Row): Promise<Check[]> {
    if (row.kind === 'shared') return [await mxCheck('mx', row.domain, true, false)];
    const receives = row.mx_verified_at !== null;
    const sendsOnly = !receives && row.dkim_verified_at !== null;
    const returnPath = returnPathOf(row.domain);
    const [mx, spf, dkim, sts, rpt, rpMx, rpSpf] = await Promise.all([
      mxCheck('mx', row.domain, receives, sendsOnly),
      spfCheck('spf', row.domain),
      dkimCheck(row),
      receives ? servedStsCheck(row, certificateCheck()) : mtaSts(row.domain),
      tlsRpt(row.domain),
      mxCheck('return-path-mx', returnPath, true, false),
      spfCheck('return-path-spf', returnPath),
    ]);
    // The return path is optional: not published is a warning that says what it would give.
    const optional = (c: Check): Check =>
      c.status === 'fail' && row.return_path_verified_at === null
        ? { ...c, status: 'warn', detail: `${c.detail} (optional: with it, SPF aligns with ${row.domain} for DMARC)` }
        : c;
    // What DNS says now: with the return path published, Postern moves the envelope sender there.
    const published = rpMx.status === 'pass' && rpSpf.status === 'pass';
    const dmarc = await dmarcCheck(row.domain, dkim.status === 'pass', published ? returnPath : bounceDomain);
    return [mx, spf, dkim, dmarc, sts, rpt, optional(rpMx), optional(rpSpf)];
  }

  // Forward-confirmed reverse DNS: the PTR of the address names `hostname` (a source's own EHLO
  // name for a source of delivery.sources), and that name resolves back to the address.
  async function fcrdnsCheck(ip: string, hostname = hostnameOfBox, name = 'fcrdns'): Promise<Check> {
    const ptrName = reverseName(ip);
    const ptrFix = { type: 'PTR', name: ptrName, value: hostname };
    const names = await ask(() => dns.reverse(ip));
    if (names === null) return { name, status: 'warn', detail: `the PTR lookup of ${ip} failed; try again` };
    if (names.length === 0) return { name, status: 'fail', detail: `${ip} has no PTR record (set it at your IP provider)`, fix: ptrFix };
    const ptrs = names.map(normalizeDomain);
    if (!ptrs.includes(hostname))
      return { name, status: 'fail', detail: `the PTR of ${ip} names ${ptrs.join(', ')}, not ${hostname}`, fix: ptrFix };
    const family = ip.includes(':') ? 'AAAA' : 'A';
    const forward = await ask(() => (family === 'A' ? dns.resolve4(hostname) : dns.resolve6(hostname)));
    if (forward === null) return { name, status: 'warn', detail: `the ${family} lookup of ${hostname} failed; try again` };
    if (!forward.includes(ip))
      return {
        name,
        status: 'fail',
        detail: `${ip} → ${hostname}, but ${hostname} resolves to ${forward.join(', ') || 'no address'}, not back to ${ip}`,
        fix: { type: family, name: hostname, value: ip },
      };
    return { name, status: 'pass', detail: `${ip} → ${hostname} → ${ip}` };
  }

  // Opportunistic STARTTLS accepts any certificate; MTA-STS and DANE senders check the name and
  // the chain, so a self-signed one warns and one that does not name `hostname` fails.
  function certificateCheck(): Check {
    const name = 'certificate';
    let found: ReturnType<CertificateSource>;
    try {
      found = certificate();
    } catch (err) {
      return { name, status: 'fail', detail: `the SMTP certificate cannot be read: ${(err as Error).message}` };
    }
    if (!found)
      return { name, status: 'warn', detail: 'no SMTP certificate yet: the daemon makes a self-signed one on first start (smtp.tlsCert)' };
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(found.pem);
    } catch (err) {
      return { name, status: 'fail', detail: `the SMTP certificate cannot be read: ${(err as Error).message}` };
    }
    const until = new Date(cert.validTo);
    const left = until.getTime() - clock.now().getTime();
    const names = cert.subjectAltName ?? cert.subject;
    if (left <= 0) return { name, status: 'fail', detail: `the SMTP certificate expired on ${until.toISOString()}` };
    if (cert.checkHost(hostname) === undefined)
      return { name, status: 'fail', detail: `the SMTP certificate names ${names}, not ${hostname} (hostname)` };
    if (left < EXPIRY_WARNING_MS)
      return { name, status: 'warn', detail: `the SMTP certificate expires on ${until.toISOString()}: renew it (smtp.tlsCert)` };
    if (!found.configured || (cert.checkIssued(cert) && cert.verify(cert.publicKey)))
      return {
        name,
        status: 'warn',
        detail: `the SMTP certificate is self-signed (valid until ${until.toISOString()}): enough for opportunistic STARTTLS, not for MTA-STS; set smtp.tlsCert and smtp.tlsKey`,
      };
    return { name, status: 'pass', detail: `the SMTP certificate names ${hostname}, valid until ${until.toISOString()}` };
  }

  // Each source address mail leaves from (delivery.sources), held to its own EHLO name.
  const sourceChecks = () =>
    Promise.all(
      Object.entries(config.delivery.sources).map(([source, s]) => fcrdnsCheck(s.address, normalizeDomain(s.ehlo), `source:${source}`)),
    );

  async function hostChecks(): Promise<Check[]> {
    const addresses: Check =
      publicIps.length === 0
        ? {
            name: 'public-addresses',
            status: 'warn',
            detail: 'doctor.publicIps is empty: SPF authorisation and reverse DNS are not checked (set the addresses mail leaves from)',
          }
        : { name: 'public-addresses', status: 'pass', detail: publicIps.join(', ') };
    const [fcrdns, sources, bounceMx, bounceSpf] = await Promise.all([
      Promise.all(publicIps.map((ip) => fcrdnsCheck(ip))),
      sourceChecks(),
      mxCheck('bounce-mx', bounceDomain, true, false),
      spfCheck('bounce-spf', bounceDomain),
    ]);
    return [addresses, ...fcrdns, ...sources, certificateCheck(), bounceMx, bounceSpf];
  }

  const rows = () =>
    db
      .selectFrom('domains')
      .innerJoin('workspaces', 'workspaces.id', 'domains.workspace_id')
      .select([
        'domains.id',
        'domains.domain',
        'domains.kind',
        'domains.workspace_id',
        'domains.dkim_selector',
        'domains.dkim_public_key',
        'domains.mx_verified_at',
        'domains.dkim_verified_at',
        'domains.return_path_verified_at',
        'domains.records_drift',
        'domains.mta_sts_mode',
        'workspaces.slug',
      ])
      .where('domains.deleted_at', 'is', null)
      .where('domains.status', '!=', 'failed');

  const report = async (row: Row & { slug: string }): Promise<DomainChecks> => {
    const checks = await domainChecks(row);
    return { id: row.id, domain: row.domain, workspace: row.slug, status: worst(checks), checks };
  };

  return {
    async run(opts = {}) {
      let query = rows().where('domains.kind', '=', 'custom');
      if (opts.domain !== undefined) query = query.where('domains.domain', '=', normalizeDomain(opts.domain));
      const found = await query.orderBy('domains.domain').orderBy('domains.created_at').execute();
      if (opts.domain !== undefined && found.length === 0) throw notFound('domain');
      const [host, domains] = await Promise.all([hostChecks(), Promise.all(found.map(report))]);
      return { status: worst([...host, ...domains.flatMap((d) => d.checks)]), host, domains };
    },

    async domain(workspaceId, id) {
      const row = await rows().where('domains.workspace_id', '=', workspaceId).where('domains.id', '=', id).executeTakeFirst();
      if (!row) throw notFound('domain');
      const [one, host] = await Promise.all([report(row), hostChecks()]);
      return { ...one, status: worst([...one.checks, ...host]), host };
    },
  };
}
