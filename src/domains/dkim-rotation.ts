// DKIM key rotation of a sending domain (docs/deliverability.md, "DKIM key rotation"). Each key
// moves through one state machine, kept in `dkim_keys`:
//
//   pending   generated under a new selector; its record is shown to publish
//   verified  its record was found through the configured resolvers
//   active    signing switched to it (as soon as every key of the rotation is verified)
//   retiring  replaced; its record stays published for `dkim.rotation.overlap` (mail signed with
//             it may still be verified: queued at a receiver, forwarded, re-checked later)
//   retired   the overlap is over: the API says to remove its record, until a lookup no longer
//             finds it
//
// A rotation brings in a 2048-bit RSA key and, unless turned off, an Ed25519 key (RFC 8463): the
// domain then signs twice. What signs stays in the domain row (read on every message sent,
// sending.ts); this module writes it there at the switch, in one transaction with the states, and
// keeps no private key of a key that no longer signs. The claim's own key has no row until a
// rotation retires it. Moves happen when the domain is read (GET), when a rotation is asked for,
// and in the daily job, which also starts the rotations the schedule (`dkim.rotation.every`,
// counted from the last switch, or from the claim's confirmation) says are due. Every transition
// is guarded by the state it leaves, so nodes reading the same domain at once move it once.
import type { Selectable } from 'kysely';
import type { DkimRotationState } from '../contract/domains.js';
import { type DkimAlgorithm, type DkimKeysTable, type DomainsTable, isUniqueViolation } from '../db/index.js';
import type { Deps } from '../deps.js';
import type { EventBus } from '../events/index.js';
import { isNoData } from '../lib/dns.js';
import { AppError } from '../lib/errors.js';
import { dkimRecordMatches, dkimRecordValue, generateDkimKeyOf } from './dkim-keys.js';
import type { DkimKeyState } from '../contract/domains.js';

type DomainRow = Selectable<DomainsTable>;
type KeyRow = Selectable<DkimKeysTable>;

/** What the operator does with a key's record. */
export type RecordAction = 'publish' | 'keep' | 'remove';

/** One DKIM key of a domain and its record, as the API shows it. */
export interface DkimKeyView {
  selector: string;
  algorithm: DkimAlgorithm;
  state: DkimKeyState;
  action: RecordAction;
  type: 'TXT';
  name: string;
  value: string;
  purpose: string;
  createdAt: string | null;
  verifiedAt: string | null;
  activatedAt: string | null;
  /** Retiring: when its record may be removed. */
  retireAt: string | null;
  retiredAt: string | null;
}

/** A domain's DKIM keys and where its rotation stands. */
export interface DkimInfo {
  /** pending: new records to publish; verified: found, signing about to switch; retiring: in the overlap; idle: nothing under way. */
  rotation: DkimRotationState;
  /** When the schedule starts the next rotation (null: only on demand, or the domain does not sign yet). */
  nextRotationAt: string | null;
  lastRotatedAt: string | null;
  /** Active keys first, then those to publish, to keep through the overlap, and to remove. */
  keys: DkimKeyView[];
}

export interface DkimRotation {
  /** The DKIM part of a custom domain's view, from its row and its rotation keys. */
  info(row: DomainRow, keys: KeyRow[]): DkimInfo;
  /** The rotation keys of these domains, by domain id (retired ones whose record is gone are left out). */
  keysOf(domainIds: string[]): Promise<Map<string, KeyRow[]>>;
  /** Moves the domain's rotation along (DNS lookups, the overlap on the clock); returns the row as it now is. */
  advance(row: DomainRow): Promise<DomainRow>;
  /** Starts a rotation: new keys under new selectors, pending until their records are published. */
  start(row: DomainRow, opts?: { ed25519?: boolean }): Promise<void>;
  /** Abandons a rotation not yet switched to: its new keys are dropped (their records may be removed). */
  cancel(row: DomainRow): Promise<void>;
  /** The daily job: advances every rotation, starts those due; returns how many it started, switched signing of, and retired keys of. */
  daily(): Promise<{ started: number; switched: number; retired: number }>;
}

export type DkimRotationDeps = Pick<Deps, 'config' | 'db' | 'clock' | 'ids' | 'dns' | 'log' | 'box'> & { bus?: EventBus };

const recordName = (selector: string, domain: string) => `${selector}._domainkey.${domain}`;

/** The selector of a rotation's key: the configured one, the UTC day, a count when that day has one already, and the algorithm. */
function nextSelector(base: string, at: Date, algorithm: DkimAlgorithm, taken: Set<string>): string {
  const day = at.toISOString().slice(0, 10).replace(/-/g, '');
  for (let n = 1; ; n++) {
    const selector = `${base}-${day}${n === 1 ? '' : `-${n}`}-${algorithm}`;
    if (!taken.has(selector)) return selector;
  }
}

export function createDkimRotation({ config, db, clock, ids, dns, log, box, bus }: DkimRotationDeps): DkimRotation {
  const settings = () => config.dkim.rotation;
  const changed = () => bus?.publish('domains.changed', null);

  // true: the record with this key is published; false: it is not (no such name, or another key);
  // null: the lookup failed (a timeout, SERVFAIL), nothing can be decided from it.
  const published = async (domain: string, key: Pick<KeyRow, 'selector' | 'public_key'>): Promise<boolean | null> => {
    try {
      const txt = await dns.resolveTxt(recordName(key.selector, domain));
      return txt.some((chunks) => dkimRecordMatches(chunks.join(''), key.public_key));
    } catch (err) {
      return isNoData(err) ? false : null;
    }
  };

  const keyRows = (domainId: string) =>
    db.selectFrom('dkim_keys').selectAll().where('domain_id', '=', domainId).where('removed_at', 'is', null).execute();

  const nextRotationAt = (row: DomainRow): string | null => {
    const every = settings().every;
    const since = row.dkim_rotated_at ?? row.dkim_verified_at;
    if (every === 0 || !since || row.kind !== 'custom') return null;
    return new Date(Date.parse(since) + every).toISOString();
  };

  const purposeOf = (domain: string, state: DkimKeyState, algorithm: DkimAlgorithm, retireAt: string | null): string => {
    const what = algorithm === 'rsa' ? 'RSA' : 'Ed25519';
    switch (state) {
      case 'pending':
        return `The next ${what} DKIM key of ${domain}: publish it; signing switches to it once Postern finds it`;
      case 'verified':
        return `The next ${what} DKIM key of ${domain}: found published; signing switches to it`;
      case 'active':
        return `The ${what} DKIM key Postern signs mail from ${domain} with: keep it published`;
      case 'retiring':
        return `The previous ${what} DKIM key of ${domain}: keep it published until ${retireAt} (mail signed with it may still be verified)`;
      case 'retired':
        return `A retired ${what} DKIM key of ${domain}: remove this record`;
    }
  };

  const keyView = (domain: string, k: Omit<KeyRow, 'id' | 'domain_id' | 'private_key' | 'removed_at'>): DkimKeyView => ({
    selector: k.selector,
    algorithm: k.algorithm,
    state: k.state,
    action: k.state === 'pending' || k.state === 'verified' ? 'publish' : k.state === 'retired' ? 'remove' : 'keep',
    type: 'TXT',
    name: recordName(k.selector, domain),
    value: dkimRecordValue(k.public_key, k.algorithm),
    purpose: purposeOf(domain, k.state, k.algorithm, k.retire_at),
    createdAt: k.created_at,
    verifiedAt: k.verified_at,
    activatedAt: k.activated_at,
    retireAt: k.retire_at,
    retiredAt: k.retired_at,
  });

  // The keys that sign, from the domain row: the claim's RSA key has no row of its own.
  const activeKeys = (row: DomainRow, keys: KeyRow[]): DkimKeyView[] => {
    const out: DkimKeyView[] = [];
    const signing: [string | null, string | null, DkimAlgorithm][] = [
      [row.dkim_selector, row.dkim_public_key, 'rsa'],
      [row.dkim_ed25519_selector, row.dkim_ed25519_public_key, 'ed25519'],
    ];
    for (const [selector, publicKey, algorithm] of signing) {
      if (!selector || !publicKey) continue;
      const own = keys.find((k) => k.selector === selector && k.state === 'active');
      out.push(
        keyView(row.domain, {
          selector,
          algorithm,
          public_key: publicKey,
          state: 'active',
          created_at: own?.created_at ?? row.created_at,
          verified_at: own?.verified_at ?? row.dkim_verified_at,
          activated_at: own?.activated_at ?? row.dkim_verified_at,
          retire_at: null,
          retired_at: null,
        }),
      );
    }
    return out;
  };

  const ORDER: DkimKeyState[] = ['pending', 'verified', 'retiring', 'retired'];
  const ALGORITHMS: DkimAlgorithm[] = ['rsa', 'ed25519'];

  const rotation: DkimRotation = {
    info(row, keys) {
      const states = new Set(keys.map((k) => k.state));
      const others = keys
        .filter((k) => k.state !== 'active')
        .sort(
          (a, b) =>
            ORDER.indexOf(a.state) - ORDER.indexOf(b.state) ||
            ALGORITHMS.indexOf(a.algorithm) - ALGORITHMS.indexOf(b.algorithm) ||
            a.selector.localeCompare(b.selector),
        );
      return {
        rotation: states.has('pending') ? 'pending' : states.has('verified') ? 'verified' : states.has('retiring') ? 'retiring' : 'idle',
        nextRotationAt: row.dkim_verified_at === null ? null : nextRotationAt(row),
        lastRotatedAt: row.dkim_rotated_at,
        // Before its record is confirmed, the claim's key is in the domain's `records`, not signing.
        keys: [...(row.dkim_verified_at === null ? [] : activeKeys(row, keys)), ...others.map((k) => keyView(row.domain, k))],
      };
    },

    async keysOf(domainIds) {
      const byDomain = new Map<string, KeyRow[]>();
      if (domainIds.length === 0) return byDomain;
      const rows = await db
        .selectFrom('dkim_keys')
        .selectAll()
        .where('domain_id', 'in', domainIds)
        .where('removed_at', 'is', null)
        .execute();
      for (const r of rows) byDomain.set(r.domain_id, [...(byDomain.get(r.domain_id) ?? []), r]);
      return byDomain;
    },

    async advance(row) {
      return (await step(row)).row;
    },

    async start(row, opts = {}) {
      if (row.kind !== 'custom') throw new AppError('shared_domain', 'the shared domain has no DKIM key of its own');
      if (row.dkim_verified_at === null || row.status === 'failed')
        throw new AppError('conflict', `${row.domain} does not sign yet: publish its DKIM record first`);
      const keys = await keyRows(row.id);
      if (keys.some((k) => k.state === 'pending' || k.state === 'verified'))
        throw new AppError('conflict', `a DKIM rotation of ${row.domain} is already under way: publish its records`);
      const now = clock.now();
      const all = await db.selectFrom('dkim_keys').select('selector').where('domain_id', '=', row.id).execute();
      const taken = new Set([...all.map((k) => k.selector), row.dkim_selector ?? '', row.dkim_ed25519_selector ?? '']);
      const algorithms: DkimAlgorithm[] = (opts.ed25519 ?? settings().ed25519) ? ['rsa', 'ed25519'] : ['rsa'];
      const fresh: KeyRow[] = [];
      for (const algorithm of algorithms) {
        const key = await generateDkimKeyOf(algorithm);
        const selector = nextSelector(config.dkim.selector, now, algorithm, taken);
        taken.add(selector);
        fresh.push({
          id: ids.uuid(),
          domain_id: row.id,
          selector,
          algorithm,
          public_key: key.publicKey,
          private_key: box.seal(key.privateKey),
          state: 'pending',
          created_at: now.toISOString(),
          verified_at: null,
          activated_at: null,
          retire_at: null,
          retired_at: null,
          removed_at: null,
        });
      }
      try {
        await db.insertInto('dkim_keys').values(fresh).execute();
      } catch (err) {
        // Another node started the same rotation meanwhile: the same selectors.
        if (isUniqueViolation(err)) throw new AppError('conflict', `a DKIM rotation of ${row.domain} is already under way`);
        throw err;
      }
      log.info({ domain: row.domain, selectors: fresh.map((k) => k.selector) }, 'DKIM rotation started: publish the new records');
    },

    async cancel(row) {
      const dropped = await db
        .deleteFrom('dkim_keys')
        .where('domain_id', '=', row.id)
        .where('state', 'in', ['pending', 'verified'])
        .executeTakeFirst();
      if (Number(dropped.numDeletedRows) === 0)
        throw new AppError('not_found', `no DKIM rotation of ${row.domain} is waiting for its records`);
      log.info({ domain: row.domain }, 'DKIM rotation canceled: the current keys keep signing');
    },

    async daily() {
      const rows = await db
        .selectFrom('domains')
        .selectAll()
        .where('kind', '=', 'custom')
        .where('deleted_at', 'is', null)
        .where('status', '!=', 'failed')
        .where('dkim_verified_at', 'is not', null)
        .execute();
      const counts = { started: 0, switched: 0, retired: 0 };
      const now = clock.now();
      for (const row of rows) {
        // One domain's failure (its database row, a key that cannot be generated) leaves the others be.
        try {
          const moved = await step(row);
          if (moved.switched) counts.switched++;
          counts.retired += moved.retired;
          const due = nextRotationAt(moved.row);
          const underWay = (await keyRows(row.id)).some((k) => k.state === 'pending' || k.state === 'verified');
          if (due && Date.parse(due) <= now.getTime() && !underWay) {
            await rotation.start(moved.row);
            log.warn({ domain: row.domain }, 'a scheduled DKIM rotation started: publish the new records (GET the domain for them)');
            counts.started++;
          }
        } catch (err) {
          log.error({ err, domain: row.domain }, 'moving the DKIM rotation of a domain failed');
        }
      }
      return counts;
    },
  };

  // One move of a domain's rotation along, and what it did.
  const step = async (row: DomainRow): Promise<{ row: DomainRow; switched: boolean; retired: number }> => {
    const none = { row, switched: false, retired: 0 };
    if (row.kind !== 'custom' || row.dkim_verified_at === null) return none;
    const keys = await keyRows(row.id);
    if (keys.length === 0) return none;
    const now = clock.now();
    const at = now.toISOString();

    // pending → verified: the record is found through the configured resolvers.
    for (const k of keys.filter((k) => k.state === 'pending')) {
      if ((await published(row.domain, k)) !== true) continue;
      await db
        .updateTable('dkim_keys')
        .set({ state: 'verified', verified_at: at })
        .where('id', '=', k.id)
        .where('state', '=', 'pending')
        .execute();
      k.state = 'verified';
      k.verified_at = at;
      log.info({ domain: row.domain, selector: k.selector }, 'the next DKIM record is published');
    }

    // verified → active, once every key of the rotation is: the previous keys start retiring.
    let next = row;
    const incoming = keys.filter((k) => k.state === 'verified');
    if (incoming.length > 0 && !keys.some((k) => k.state === 'pending')) next = await switchTo(row, incoming, now);

    // retiring → retired, when the overlap is over.
    const over = await db
      .updateTable('dkim_keys')
      .set({ state: 'retired', retired_at: at })
      .where('domain_id', '=', row.id)
      .where('state', '=', 'retiring')
      .where('retire_at', '<=', at)
      .executeTakeFirst();
    if (Number(over.numUpdatedRows) > 0) log.info({ domain: row.domain }, 'a DKIM key retired: its record may be removed');

    // retired: listed until its record is found gone.
    const retired = await db
      .selectFrom('dkim_keys')
      .selectAll()
      .where('domain_id', '=', row.id)
      .where('state', '=', 'retired')
      .where('removed_at', 'is', null)
      .execute();
    for (const k of retired) {
      if ((await published(row.domain, k)) !== false) continue;
      await db.updateTable('dkim_keys').set({ removed_at: at }).where('id', '=', k.id).where('removed_at', 'is', null).execute();
    }
    return { row: next, switched: next.dkim_rotated_at !== row.dkim_rotated_at, retired: Number(over.numUpdatedRows) };
  };

  // The switch, in one transaction: the incoming keys become active and go into the domain row
  // (what signs); the keys they replace start retiring, with the overlap's end; no private key is
  // kept outside the domain row. Guarded by the incoming keys' state: another node that switched
  // first leaves nothing to do here.
  const switchTo = async (row: DomainRow, incoming: KeyRow[], now: Date): Promise<DomainRow> => {
    const at = now.toISOString();
    const retireAt = new Date(now.getTime() + settings().overlap).toISOString();
    const rsa = incoming.find((k) => k.algorithm === 'rsa');
    const ed = incoming.find((k) => k.algorithm === 'ed25519') ?? null;
    if (!rsa || !rsa.private_key) return row;
    const outgoing: { selector: string; publicKey: string; algorithm: DkimAlgorithm }[] = [];
    if (row.dkim_selector && row.dkim_public_key)
      outgoing.push({ selector: row.dkim_selector, publicKey: row.dkim_public_key, algorithm: 'rsa' });
    if (row.dkim_ed25519_selector && row.dkim_ed25519_public_key)
      outgoing.push({ selector: row.dkim_ed25519_selector, publicKey: row.dkim_ed25519_public_key, algorithm: 'ed25519' });
    const drift = (row.records_drift ?? '').split(',').filter((c) => c && c !== 'dkim');
    const set = {
      dkim_selector: rsa.selector,
      dkim_private_key: rsa.private_key,
      dkim_public_key: rsa.public_key,
      dkim_ed25519_selector: ed?.selector ?? null,
      dkim_ed25519_private_key: ed?.private_key ?? null,
      dkim_ed25519_public_key: ed?.public_key ?? null,
      dkim_rotated_at: at,
      // The new record was just found: whatever the last re-check said of the old one no longer applies.
      records_drift: drift.length ? drift.join(',') : null,
    };
    const switched = await db.transaction().execute(async (trx) => {
      const moved = await trx
        .updateTable('dkim_keys')
        .set({ state: 'active', activated_at: at, private_key: null })
        .where(
          'id',
          'in',
          incoming.map((k) => k.id),
        )
        .where('state', '=', 'verified')
        .executeTakeFirst();
      if (Number(moved.numUpdatedRows) !== incoming.length) return false;
      for (const old of outgoing) {
        const kept = await trx
          .updateTable('dkim_keys')
          .set({ state: 'retiring', retire_at: retireAt, private_key: null })
          .where('domain_id', '=', row.id)
          .where('selector', '=', old.selector)
          .where('state', '=', 'active')
          .executeTakeFirst();
        if (Number(kept.numUpdatedRows) === 0)
          await trx
            .insertInto('dkim_keys')
            .values({
              id: ids.uuid(),
              domain_id: row.id,
              selector: old.selector,
              algorithm: old.algorithm,
              public_key: old.publicKey,
              private_key: null,
              state: 'retiring',
              created_at: row.created_at,
              verified_at: row.dkim_verified_at,
              activated_at: row.dkim_verified_at,
              retire_at: retireAt,
              retired_at: null,
              removed_at: null,
            })
            .execute();
      }
      await trx.updateTable('domains').set(set).where('id', '=', row.id).execute();
      return true;
    });
    if (!switched) return (await db.selectFrom('domains').selectAll().where('id', '=', row.id).executeTakeFirst()) ?? row;
    log.info(
      { domain: row.domain, selectors: incoming.map((k) => k.selector), retireAt },
      'DKIM signing switched to the new keys; the previous ones stay published through the overlap',
    );
    changed();
    return { ...row, ...set };
  };

  return rotation;
}
