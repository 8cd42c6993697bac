// Inbound (and sending) domains of a workspace. The shared domain {slug}.in.{shared} is created
// lazily and needs no DNS; a custom domain is claimed with a fresh DKIM key and two records to
// publish, each confirmed by a live DNS lookup on every read until it is (docs/dns.md):
//   - the DKIM record confirms sending: the domain signs and may be `from` (domains/sending.ts);
//   - the MX record pointing at `hostname` confirms receiving: mail for it is accepted
//     (inbound/routing.ts) and addresses may be created on it.
// A custom domain that sends may also publish its own return path, `bounces.<domain>` (an MX to
// `hostname` and an SPF record for the box): once confirmed, the envelope sender moves there from
// the shared bounce domain and SPF aligns with the From domain for DMARC. It is confirmed apart
// from the rest and never holds the domain's status up (docs/dns.md, "Return path").
// A custom domain that receives here also gets an MTA-STS policy served at mta-sts.<domain> and two
// optional TXT records to publish with it (domains/mta-sts-policy.ts, docs/dns.md, "MTA-STS").
// A sending domain's DKIM key is rotated by dkim-rotation.ts, which each read of the domain moves
// along; its keys are the view's `dkim`, while `records` keeps listing the RSA key that signs.
// A domain that only sends never needs Postern as its MX. `status` is the interface's: pending
// until both are confirmed, then verified (with `verifiedAt`). A claim with neither confirmed 7
// days after creation becomes failed and no longer blocks other claims.
import type { Selectable } from 'kysely';
import { type DomainsTable, flag, isUniqueViolation } from '../db/index.js';
import type { Deps } from '../deps.js';
import type { EventBus } from '../events/index.js';
import { isNoData } from '../lib/dns.js';
import { AppError, notFound } from '../lib/errors.js';
import { dkimRecordMatches, dkimRecordValue, generateDkimKey } from './dkim-keys.js';
import { createDkimRotation, type DkimInfo } from './dkim-rotation.js';
import { mtaStsRecordsOf, policyUrlOf, reportAddressOf, servedPolicyOf, type MtaStsRecord } from './mta-sts-policy.js';
import {
  bounceDomainOf,
  boxSpfRecord,
  isDomainName,
  normalizeDomain,
  returnPathOf,
  sharedDomainOf,
  sharedParentOf,
  slugOfSharedDomain,
} from './names.js';
import { spfRecordsAt, spfVerdict } from './spf-check.js';
import type { DomainKind, DomainStatus, MtaStsMode } from '../contract/domains.js';

const CLAIM_EXPIRY_MS = 7 * 24 * 3600 * 1000;

export interface DnsRecord {
  type: 'MX' | 'TXT';
  name: string;
  value: string;
  priority?: number;
  purpose: string;
  check: 'inboundMx' | 'dkim';
  /** Whether this record's check has been confirmed (it stays confirmed). */
  verified: boolean;
  /**
   * For a confirmed record, what the last re-check found: true still published, false no longer
   * (changed or removed: the Overview warns); null before it is confirmed.
   */
  stillPublished: boolean | null;
}

/** One capability of a domain and when it was confirmed. */
export interface Capability {
  verified: boolean;
  verifiedAt: string | null;
}

/** A custom domain's own return path and the records that make it one. */
export interface ReturnPath {
  /** `bounces.<domain>`: the envelope sender's domain once confirmed. */
  host: string;
  /** Both records found: VERP addresses use the host, and SPF aligns. */
  verified: boolean;
  verifiedAt: string | null;
  /** For a confirmed return path, whether the last re-check still found it (false: mail falls back to the shared bounce domain). */
  stillPublished: boolean | null;
  records: { type: 'MX' | 'TXT'; name: string; value: string; priority?: number; purpose: string }[];
}

/** A custom domain's MTA-STS policy and its two optional TXT records (they never hold the status up). */
export interface MtaStsInfo {
  mode: MtaStsMode;
  maxAge: number;
  /** The id `_mta-sts.<domain>` must publish: it changes whenever the policy does. */
  policyId: string;
  /** The policy's URL; it is served once Postern receives for the domain. */
  url: string;
  served: boolean;
  records: MtaStsRecord[];
}

export interface InboundDomain {
  id: string;
  domain: string;
  kind: DomainKind;
  status: DomainStatus;
  records: DnsRecord[];
  /** Custom domains only (null for the shared one). */
  returnPath: ReturnPath | null;
  /** Custom domains only (null for the shared one). */
  mtaSts: MtaStsInfo | null;
  /** Custom domains only (null for the shared one): the DKIM keys, their records, and the rotation (dkim-rotation.ts). */
  dkim: DkimInfo | null;
  /** DKIM record confirmed: the domain signs and may be a send's `from`. */
  sending: Capability;
  /** MX confirmed (always, for the shared domain): Postern receives mail for it. */
  receiving: Capability;
  verifiedAt: string | null;
  createdAt: string;
}

type Row = Selectable<DomainsTable>;

export interface DomainStore {
  /** The workspace's shared domain row, created on first use. */
  ensureShared(workspace: { id: string; slug: string }): Promise<Row>;
  list(workspaceId: string): Promise<InboundDomain[]>;
  /** Re-checks a custom domain's records through DNS before answering (pending: to confirm; confirmed: still published). */
  get(workspaceId: string, id: string): Promise<InboundDomain>;
  claim(workspaceId: string, input: { domain: string; acknowledgeExistingMx?: boolean }): Promise<InboundDomain>;
  remove(workspaceId: string, id: string): Promise<void>;
  /** Marks claims pending for more than 7 days with no record confirmed as failed; returns how many. */
  expireClaims(): Promise<number>;
  /** Looks up every confirmed record of every custom domain again (the daily job); returns how many no longer match. */
  recheckConfirmed(): Promise<number>;
  /** Starts a DKIM key rotation of a custom sending domain (dkim-rotation.ts); `ed25519` overrides `dkim.rotation.ed25519`. */
  rotateDkim(workspaceId: string, id: string, opts?: { ed25519?: boolean }): Promise<InboundDomain>;
  /** Abandons the domain's DKIM rotation while it waits for its records; the current keys keep signing. */
  cancelDkimRotation(workspaceId: string, id: string): Promise<InboundDomain>;
  /** The daily job of DKIM rotations: moves each along and starts those the schedule says are due. */
  rotateDkimKeys(): Promise<{ started: number; switched: number; retired: number }>;
  /** A custom domain row of the workspace verified for receiving (for address creation). */
  verifiedCustom(workspaceId: string, id: string): Promise<Row | null>;
  /** True when mail to this domain would be received by Postern (any workspace, any state but failed/deleted). */
  isServedDomain(domain: string): Promise<boolean>;
  /** Shared domains stored in another form than {slug}.in.{sharedInboundDomain} (they keep receiving). */
  sharedDomainsOfOtherForm(): Promise<string[]>;
}

export interface DomainDeps extends Pick<Deps, 'config' | 'db' | 'clock' | 'ids' | 'dns' | 'log' | 'box'> {
  /** `domains.changed` is published when a domain starts or stops receiving or signing, or is removed. */
  bus?: EventBus;
}

const sameHost = (a: string, b: string) => normalizeDomain(a) === normalizeDomain(b);

type Check = DnsRecord['check'] | 'returnPath';

function driftOf(row: Pick<Row, 'records_drift'>): Check[] {
  return (row.records_drift ?? '').split(',').filter(Boolean) as Check[];
}

const confirmedAt = (row: Row, check: Check): string | null =>
  check === 'inboundMx' ? row.mx_verified_at : check === 'dkim' ? row.dkim_verified_at : row.return_path_verified_at;

/** The return path of a row in use: confirmed, and found again at the last re-check. */
export function returnPathInUse(row: Pick<Row, 'domain' | 'return_path_verified_at' | 'records_drift'>): string | null {
  return row.return_path_verified_at !== null && !driftOf(row).includes('returnPath') ? returnPathOf(row.domain) : null;
}

function stillPublished(row: Row, check: Check): boolean | null {
  const confirmed = confirmedAt(row, check);
  if (row.kind !== 'custom' || confirmed === null) return null;
  return !driftOf(row).includes(check);
}

/** The MX and DKIM records a custom domain publishes: the values the claim lists and `postern doctor` proposes as fixes. */
export function publishedRecordsOf(
  row: Pick<Row, 'domain' | 'dkim_selector' | 'dkim_public_key'>,
  hostname: string,
): { mx: { name: string; value: string; priority: number }; dkim: { name: string; value: string } } {
  return {
    mx: { name: row.domain, value: hostname, priority: 10 },
    dkim: { name: `${row.dkim_selector}._domainkey.${row.domain}`, value: dkimRecordValue(row.dkim_public_key ?? '') },
  };
}

export function createDomainStore({ config, db, clock, ids, dns, log, bus, box }: DomainDeps): DomainStore {
  const changed = () => bus?.publish('domains.changed', null);
  const rotation = createDkimRotation({ config, db, clock, ids, dns, log, bus, box });
  const records = (row: Row): DnsRecord[] => {
    if (row.kind === 'shared') return [];
    const publish = publishedRecordsOf(row, config.hostname);
    return [
      {
        type: 'MX',
        name: publish.mx.name,
        value: publish.mx.value,
        priority: publish.mx.priority,
        purpose: `Routes mail for ${row.domain} to this Postern server (replaces any other MX for the domain); needed only to receive`,
        check: 'inboundMx',
        verified: row.mx_verified_at !== null,
        stillPublished: stillPublished(row, 'inboundMx'),
      },
      {
        type: 'TXT',
        name: publish.dkim.name,
        value: publish.dkim.value,
        purpose: `Publishes the DKIM public key Postern signs mail from ${row.domain} with; needed to send from it`,
        check: 'dkim',
        verified: row.dkim_verified_at !== null,
        stillPublished: stillPublished(row, 'dkim'),
      },
    ];
  };

  const returnPathView = (row: Row): ReturnPath | null => {
    if (row.kind !== 'custom') return null;
    const host = returnPathOf(row.domain);
    return {
      host,
      verified: returnPathInUse(row) !== null,
      verifiedAt: row.return_path_verified_at,
      stillPublished: stillPublished(row, 'returnPath'),
      records: [
        {
          type: 'MX',
          name: host,
          value: config.hostname,
          priority: 10,
          purpose: `Brings bounces (DSNs) of mail from ${row.domain} back to Postern; optional, with the SPF record it aligns SPF for DMARC`,
        },
        {
          type: 'TXT',
          name: host,
          value: boxSpfRecord(config.hostname, config.doctor.publicIps),
          purpose: `Authorises this server to send with ${host} as the envelope sender (SPF)`,
        },
      ],
    };
  };

  const mtaStsView = (row: Row): MtaStsInfo | null => {
    if (row.kind !== 'custom') return null;
    const policy = servedPolicyOf(row.domain, row.mta_sts_mode, config.hostname);
    return {
      mode: policy.mode,
      maxAge: policy.maxAge,
      policyId: policy.id,
      url: policyUrlOf(row.domain),
      served: row.status !== 'failed' && row.mx_verified_at !== null,
      records: mtaStsRecordsOf(policy, reportAddressOf(config)),
    };
  };

  const capability = (at: string | null): Capability => ({ verified: at !== null, verifiedAt: at });
  const view = (row: Row, keys: Awaited<ReturnType<typeof rotation.keysOf>> = new Map()): InboundDomain => ({
    id: row.id,
    domain: row.domain,
    kind: row.kind,
    status: row.status,
    records: records(row),
    returnPath: returnPathView(row),
    mtaSts: mtaStsView(row),
    dkim: row.kind === 'custom' ? rotation.info(row, keys.get(row.id) ?? []) : null,
    sending: capability(row.dkim_verified_at),
    receiving: capability(row.mx_verified_at),
    verifiedAt: row.verified_at,
    createdAt: row.created_at,
  });

  // The two lookups, throwing on a failed lookup; `lookup` turns "no such record" into false and
  // any other failure (a timeout, SERVFAIL) into null: nothing can be decided from it.
  const mxMatches = async (domain: string) => (await dns.resolveMx(domain)).some((mx) => sameHost(mx.exchange, config.hostname));
  const dkimMatches = async (row: Row) =>
    (await dns.resolveTxt(`${row.dkim_selector}._domainkey.${row.domain}`)).some((chunks) =>
      dkimRecordMatches(chunks.join(''), row.dkim_public_key ?? ''),
    );
  const lookup = async (ask: () => Promise<boolean>): Promise<boolean | null> => {
    try {
      return await ask();
    } catch (err) {
      return isNoData(err) ? false : null;
    }
  };
  // The return path: its MX at `hostname`, and one SPF record that authorises the box (each of
  // `doctor.publicIps` passes it; without them, the record names `a:<hostname>` or `mx`, as the one
  // we ask for does).
  const returnPathMatches = async (row: Row): Promise<boolean> => {
    const host = returnPathOf(row.domain);
    if (!(await mxMatches(host))) return false;
    const spf = await spfRecordsAt(dns, host);
    if (spf.length !== 1) return false;
    const publicIps = config.doctor.publicIps;
    if (publicIps.length === 0) {
      const name = normalizeDomain(config.hostname).replace(/\./g, '\\.');
      return new RegExp(`(^|\\s)\\+?(a:${name}|mx)(\\s|$)`, 'i').test(spf[0]);
    }
    const verdicts = await Promise.all(publicIps.map((ip) => spfVerdict(dns, host, ip, config.hostname)));
    return verdicts.every((v) => v === 'pass');
  };
  // A sending domain's return path, while not confirmed, is looked up on each read like a pending
  // record; found, it is confirmed and routing learns the new bounce host.
  const refreshReturnPath = async (row: Row): Promise<Row> => {
    if (row.kind !== 'custom' || row.status === 'failed' || row.dkim_verified_at === null || row.return_path_verified_at !== null)
      return row;
    if ((await lookup(() => returnPathMatches(row))) !== true) return row;
    const at = clock.now().toISOString();
    await db
      .updateTable('domains')
      .set({ return_path_verified_at: at })
      .where('id', '=', row.id)
      .where('return_path_verified_at', 'is', null)
      .execute();
    log.info({ domain: row.domain, returnPath: returnPathOf(row.domain) }, 'return path confirmed: the envelope sender moves to it');
    changed();
    return { ...row, return_path_verified_at: at };
  };
  const mxPointsHere = async (domain: string): Promise<boolean> => (await lookup(() => mxMatches(domain))) === true;
  const dkimPublished = async (row: Row): Promise<boolean> => (await lookup(() => dkimMatches(row))) === true;

  // While pending, each record not yet confirmed is looked up; one found is confirmed for good (its
  // capability starts), both make the domain verified. Nothing confirmed after 7 days: failed.
  const refresh = async (row: Row): Promise<Row> => {
    if (row.kind !== 'custom' || row.status !== 'pending') return row;
    const now = clock.now();
    const nothingYet = row.mx_verified_at === null && row.dkim_verified_at === null;
    if (nothingYet && now.getTime() - Date.parse(row.created_at) > CLAIM_EXPIRY_MS) {
      await db
        .updateTable('domains')
        .set({ status: 'failed' })
        .where('id', '=', row.id)
        .where('status', '=', 'pending')
        .where('mx_verified_at', 'is', null)
        .where('dkim_verified_at', 'is', null)
        .execute();
      return { ...row, status: 'failed' };
    }
    const [mx, dkim] = await Promise.all([
      row.mx_verified_at === null && mxPointsHere(row.domain),
      row.dkim_verified_at === null && dkimPublished(row),
    ]);
    if (!mx && !dkim) return row;
    // A confirmation is only ever added (another node may have confirmed the other record
    // meanwhile); the domain becomes verified once the row holds both.
    const at = now.toISOString();
    if (mx)
      await db.updateTable('domains').set({ mx_verified_at: at }).where('id', '=', row.id).where('mx_verified_at', 'is', null).execute();
    if (dkim)
      await db
        .updateTable('domains')
        .set({ dkim_verified_at: at })
        .where('id', '=', row.id)
        .where('dkim_verified_at', 'is', null)
        .execute();
    await db
      .updateTable('domains')
      .set({ status: 'verified', verified_at: at })
      .where('id', '=', row.id)
      .where('status', '=', 'pending')
      .where('mx_verified_at', 'is not', null)
      .where('dkim_verified_at', 'is not', null)
      .execute();
    const next = (await db.selectFrom('domains').selectAll().where('id', '=', row.id).executeTakeFirst()) ?? row;
    log.info(
      { domain: row.domain, sending: next.dkim_verified_at !== null, receiving: next.mx_verified_at !== null, status: next.status },
      'domain records confirmed',
    );
    if (next.mx_verified_at !== row.mx_verified_at || next.dkim_verified_at !== row.dkim_verified_at) changed();
    return next;
  };

  // A confirmed record is looked up again: one no longer published is recorded as drift (the
  // capability stays: mail keeps flowing while the operator fixes DNS). A failed lookup decides
  // nothing and changes nothing.
  const recheck = async (row: Row): Promise<Row> => {
    if (row.kind !== 'custom' || row.status === 'failed' || (row.mx_verified_at === null && row.dkim_verified_at === null)) return row;
    const [mx, dkim, returnPath] = await Promise.all([
      row.mx_verified_at === null ? null : lookup(() => mxMatches(row.domain)),
      row.dkim_verified_at === null ? null : lookup(() => dkimMatches(row)),
      row.return_path_verified_at === null ? null : lookup(() => returnPathMatches(row)),
    ]);
    const before = driftOf(row);
    const found = { inboundMx: mx, dkim, returnPath };
    const drift = (['inboundMx', 'dkim', 'returnPath'] as const).filter((check) => {
      if (confirmedAt(row, check) === null) return false;
      return found[check] === null ? before.includes(check) : !found[check];
    });
    const next = drift.length ? drift.join(',') : null;
    if (next === row.records_drift) return row;
    const since = clock.now().toISOString();
    await db.updateTable('domains').set({ records_drift: next, records_drift_since: since }).where('id', '=', row.id).execute();
    // A return path that left (or came back) moves the envelope sender, and routing with it.
    if (before.includes('returnPath') !== drift.includes('returnPath')) changed();
    if (next) log.warn({ domain: row.domain, records: drift }, 'a confirmed DNS record of a domain is no longer published');
    else log.info({ domain: row.domain }, "the domain's DNS records are published again");
    return { ...row, records_drift: next, records_drift_since: since };
  };

  const liveRow = (workspaceId: string, id: string) =>
    db
      .selectFrom('domains')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();

  const store: DomainStore = {
    async ensureShared(workspace) {
      const find = () =>
        db
          .selectFrom('domains')
          .selectAll()
          .where('workspace_id', '=', workspace.id)
          .where('kind', '=', 'shared')
          .where('deleted_at', 'is', null)
          .executeTakeFirst();
      const existing = await find();
      if (existing) return existing;
      const now = clock.now().toISOString();
      const row: Row = {
        id: ids.uuid(),
        workspace_id: workspace.id,
        domain: sharedDomainOf(workspace.slug, config.sharedInboundDomain),
        kind: 'shared',
        status: 'verified',
        dkim_selector: null,
        dkim_private_key: null,
        dkim_public_key: null,
        verified_at: now,
        dkim_verified_at: null,
        mx_verified_at: now,
        return_path_verified_at: null,
        records_drift: null,
        records_drift_since: null,
        mta_sts_mode: 'testing',
        dkim_ed25519_selector: null,
        dkim_ed25519_private_key: null,
        dkim_ed25519_public_key: null,
        dkim_rotated_at: null,
        created_at: now,
        deleted_at: null,
      };
      await db.insertInto('domains').values(row).execute();
      changed();
      // Two first address creations at once may both insert; keep the oldest, drop the other.
      const all = await db
        .selectFrom('domains')
        .selectAll()
        .where('workspace_id', '=', workspace.id)
        .where('kind', '=', 'shared')
        .where('deleted_at', 'is', null)
        .orderBy('id')
        .execute();
      for (const extra of all.slice(1)) {
        const used = await db.selectFrom('inbound_addresses').select('id').where('domain_id', '=', extra.id).executeTakeFirst();
        if (!used) await db.deleteFrom('domains').where('id', '=', extra.id).execute();
      }
      return all[0];
    },

    async list(workspaceId) {
      const rows = await db
        .selectFrom('domains')
        .selectAll()
        .where('workspace_id', '=', workspaceId)
        .where('deleted_at', 'is', null)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      const refreshed = await Promise.all(rows.map(async (r) => refreshReturnPath(await refresh(r))));
      const keys = await rotation.keysOf(rows.filter((r) => r.kind === 'custom').map((r) => r.id));
      // The shared domain first, then custom domains oldest first.
      return [...refreshed.filter((r) => r.kind === 'shared'), ...refreshed.filter((r) => r.kind !== 'shared')].map((r) => view(r, keys));
    },

    async get(workspaceId, id) {
      const row = await liveRow(workspaceId, id);
      if (!row) throw notFound('domain');
      // A rotation under way moves along too: its new records looked up, its overlap checked.
      const fresh = await rotation.advance(await recheck(await refreshReturnPath(await refresh(row))));
      return view(fresh, await rotation.keysOf([fresh.id]));
    },

    async rotateDkim(workspaceId, id, opts = {}) {
      const row = await liveRow(workspaceId, id);
      if (!row) throw notFound('domain');
      await rotation.start(await refresh(row), opts);
      return store.get(workspaceId, id);
    },

    async cancelDkimRotation(workspaceId, id) {
      const row = await liveRow(workspaceId, id);
      if (!row) throw notFound('domain');
      await rotation.cancel(row);
      return store.get(workspaceId, id);
    },

    rotateDkimKeys: () => rotation.daily(),

    async claim(workspaceId, input) {
      const domain = normalizeDomain(input.domain);
      if (!isDomainName(domain)) throw new AppError('invalid_domain', `${input.domain} is not a domain name that can receive mail`);
      const shared = sharedParentOf(config.sharedInboundDomain);
      if (domain === shared || domain.endsWith('.' + shared) || domain === bounceDomainOf(config) || sameHost(domain, config.hostname)) {
        throw new AppError('invalid_domain', `${domain} is served by Postern itself and cannot be claimed`);
      }
      const claims = await db
        .selectFrom('domains')
        .select(['workspace_id', 'status'])
        .where('domain', '=', domain)
        .where('deleted_at', 'is', null)
        .where('status', '!=', 'failed')
        .execute();
      if (claims.some((c) => c.workspace_id === workspaceId))
        throw new AppError('already_exists', `this workspace already receives on ${domain}`);
      if (claims.length > 0) throw new AppError('domain_claimed', `${domain} is claimed by another workspace`);
      if (!input.acknowledgeExistingMx) {
        let hosts: string[] = [];
        try {
          hosts = (await dns.resolveMx(domain))
            .map((mx) => normalizeDomain(mx.exchange))
            .filter((h) => h !== '' && !sameHost(h, config.hostname));
        } catch {
          hosts = []; // no MX (or no answer): nothing to take over
        }
        if (hosts.length > 0) {
          throw new AppError(
            'existing_mx',
            `${domain} already receives mail elsewhere; publishing our MX replaces it. Retry with acknowledgeExistingMx: true`,
            { hosts },
          );
        }
      }
      const key = await generateDkimKey();
      const row: Row = {
        id: ids.uuid(),
        workspace_id: workspaceId,
        domain,
        kind: 'custom',
        status: 'pending',
        dkim_selector: config.dkim.selector,
        // Sealed at rest like provider credentials: a copy of the database alone cannot sign.
        dkim_private_key: box.seal(key.privateKey),
        dkim_public_key: key.publicKey,
        verified_at: null,
        dkim_verified_at: null,
        mx_verified_at: null,
        return_path_verified_at: null,
        records_drift: null,
        records_drift_since: null,
        mta_sts_mode: 'testing',
        dkim_ed25519_selector: null,
        dkim_ed25519_private_key: null,
        dkim_ed25519_public_key: null,
        dkim_rotated_at: null,
        created_at: clock.now().toISOString(),
        deleted_at: null,
      };
      try {
        await db.insertInto('domains').values(row).execute();
      } catch (err) {
        if (isUniqueViolation(err)) throw new AppError('already_exists', `this workspace already receives on ${domain}`);
        throw err;
      }
      return view(row);
    },

    async remove(workspaceId, id) {
      const row = await liveRow(workspaceId, id);
      if (!row) throw notFound('domain');
      if (row.kind === 'shared') throw new AppError('shared_domain', 'the shared domain cannot be deleted');
      const now = clock.now().toISOString();
      await db.transaction().execute(async (trx) => {
        await trx.updateTable('domains').set({ deleted_at: now }).where('id', '=', id).execute();
        await trx
          .updateTable('inbound_addresses')
          .set({ deleted_at: now, active: flag(false) })
          .where('domain_id', '=', id)
          .where('deleted_at', 'is', null)
          .execute();
      });
      changed();
    },

    async expireClaims() {
      const cutoff = new Date(clock.now().getTime() - CLAIM_EXPIRY_MS).toISOString();
      const r = await db
        .updateTable('domains')
        .set({ status: 'failed' })
        .where('status', '=', 'pending')
        .where('created_at', '<', cutoff)
        .where('mx_verified_at', 'is', null)
        .where('dkim_verified_at', 'is', null)
        .executeTakeFirst();
      return Number(r.numUpdatedRows);
    },

    async recheckConfirmed() {
      const rows = await db
        .selectFrom('domains')
        .selectAll()
        .where('kind', '=', 'custom')
        .where('deleted_at', 'is', null)
        .where('status', '!=', 'failed')
        .where((eb) => eb.or([eb('mx_verified_at', 'is not', null), eb('dkim_verified_at', 'is not', null)]))
        .execute();
      let drifting = 0;
      for (const row of rows) if ((await recheck(row)).records_drift) drifting++;
      return drifting;
    },

    async verifiedCustom(workspaceId, id) {
      const row = await liveRow(workspaceId, id);
      if (!row || row.kind !== 'custom') return null;
      const fresh = await refresh(row);
      return fresh.status !== 'failed' && fresh.mx_verified_at !== null ? fresh : null;
    },

    async sharedDomainsOfOtherForm() {
      const rows = await db
        .selectFrom('domains')
        .innerJoin('workspaces', 'workspaces.id', 'domains.workspace_id')
        .select(['domains.domain', 'workspaces.slug'])
        .where('domains.kind', '=', 'shared')
        .where('domains.deleted_at', 'is', null)
        .execute();
      return rows.filter((r) => r.domain !== sharedDomainOf(r.slug, config.sharedInboundDomain)).map((r) => r.domain);
    },

    async isServedDomain(domain) {
      const d = normalizeDomain(domain);
      if (d === bounceDomainOf(config) || slugOfSharedDomain(d, config.sharedInboundDomain) !== null) return true;
      if (d === sharedParentOf(config.sharedInboundDomain)) return true;
      const row = await db
        .selectFrom('domains')
        .select('id')
        .where('domain', '=', d)
        .where('deleted_at', 'is', null)
        .where('status', '!=', 'failed')
        .executeTakeFirst();
      return !!row;
    },
  };
  return store;
}
