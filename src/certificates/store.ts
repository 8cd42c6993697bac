// Where certificates obtained by ACME are kept: the database, so every node of a cluster serves the
// same ones and any node can answer the CA's HTTP-01 request. Keys are sealed under `secrets.key`.
// A name is renewed under a lease: the node whose conditional update takes the row renews it, and
// only that node's result is written back (the write names it), so two nodes racing renew once and
// a node that lost its lease while it waited on the CA cannot overwrite what replaced it.
import type { Deps } from '../deps.js';

export interface CertificateState {
  name: string;
  /** The PEM chain, null before the first issue. */
  cert: string | null;
  notAfter: string | null;
  issuedAt: string | null;
  failures: number;
  lastError: string | null;
  nextAttemptAt: string | null;
}

export interface IssuedCertificate {
  cert: string;
  key: string;
  notAfter: string;
}

export interface CertificateStore {
  list(): Promise<CertificateState[]>;
  /** Every issued certificate with its key opened, for serving. */
  issued(): Promise<(IssuedCertificate & { name: string; issuedAt: string })[]>;
  /** Adds a row for each name not yet known (a name to obtain). */
  want(names: string[]): Promise<void>;
  /**
   * Takes the lease on `name` for `leaseMs` when no other node holds one and, unless `force`, its
   * back-off has passed and its certificate is due (none, or expiring before `dueBefore`).
   */
  claim(name: string, node: string, leaseMs: number, opts: { force: boolean; dueBefore: string }): Promise<boolean>;
  /** Writes what the lease holder obtained; false when the lease was lost meanwhile (nothing written). */
  saveIssued(name: string, node: string, issued: IssuedCertificate): Promise<boolean>;
  saveFailure(name: string, node: string, error: string, nextAttemptAt: string): Promise<void>;
  /** Drops the certificate (after a revocation): the next check obtains a new one. */
  forget(name: string): Promise<void>;
  /** The ACME account key for a directory, made by `make` on first use (the first node's wins). */
  accountKey(directoryUrl: string, make: () => Promise<string>): Promise<string>;
  putChallenge(token: string, keyAuthorization: string, expiresAt: string): Promise<void>;
  challenge(token: string): Promise<string | null>;
  removeChallenge(token: string): Promise<void>;
}

export function createCertificateStore({ db, box, clock }: Pick<Deps, 'db' | 'box' | 'clock'>): CertificateStore {
  const now = () => clock.now().toISOString();
  return {
    async list() {
      const rows = await db.selectFrom('certificates').selectAll().orderBy('name').execute();
      return rows.map((r) => ({
        name: r.name,
        cert: r.cert,
        notAfter: r.not_after,
        issuedAt: r.issued_at,
        failures: Number(r.failures),
        lastError: r.last_error,
        nextAttemptAt: r.next_attempt_at,
      }));
    },

    async issued() {
      const rows = await db
        .selectFrom('certificates')
        .select(['name', 'cert', 'key', 'not_after', 'issued_at'])
        .where('cert', 'is not', null)
        .execute();
      return rows.map((r) => ({ name: r.name, cert: r.cert!, key: box.open(r.key!), notAfter: r.not_after!, issuedAt: r.issued_at! }));
    },

    async want(names) {
      if (names.length === 0) return;
      await db
        .insertInto('certificates')
        .values(names.map((name) => ({ name, failures: 0 })))
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
    },

    async claim(name, node, leaseMs, { force, dueBefore }) {
      const at = now();
      let q = db
        .updateTable('certificates')
        .set({ renewing_node: node, renewing_until: new Date(clock.now().getTime() + leaseMs).toISOString() })
        .where('name', '=', name)
        .where((eb) => eb.or([eb('renewing_until', 'is', null), eb('renewing_until', '<', at)]));
      if (!force) {
        q = q
          .where((eb) => eb.or([eb('next_attempt_at', 'is', null), eb('next_attempt_at', '<=', at)]))
          .where((eb) => eb.or([eb('not_after', 'is', null), eb('not_after', '<', dueBefore)]));
      }
      const r = await q.executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    async saveIssued(name, node, issued) {
      const r = await db
        .updateTable('certificates')
        .set({
          cert: issued.cert,
          key: box.seal(issued.key),
          not_after: issued.notAfter,
          issued_at: now(),
          renewing_node: null,
          renewing_until: null,
          failures: 0,
          last_error: null,
          next_attempt_at: null,
        })
        .where('name', '=', name)
        .where('renewing_node', '=', node)
        .executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    async saveFailure(name, node, error, nextAttemptAt) {
      await db
        .updateTable('certificates')
        .set((eb) => ({
          failures: eb('failures', '+', 1),
          last_error: error.slice(0, 1000),
          next_attempt_at: nextAttemptAt,
          renewing_node: null,
          renewing_until: null,
        }))
        .where('name', '=', name)
        .where('renewing_node', '=', node)
        .execute();
    },

    async forget(name) {
      await db
        .updateTable('certificates')
        .set({ cert: null, key: null, not_after: null, issued_at: null, failures: 0, last_error: null, next_attempt_at: null })
        .where('name', '=', name)
        .execute();
    },

    async accountKey(directoryUrl, make) {
      const found = await db.selectFrom('acme_accounts').select('key').where('directory_url', '=', directoryUrl).executeTakeFirst();
      if (found) return box.open(found.key);
      await db
        .insertInto('acme_accounts')
        .values({ directory_url: directoryUrl, key: box.seal(await make()), created_at: now() })
        .onConflict((oc) => oc.column('directory_url').doNothing())
        .execute();
      const row = await db.selectFrom('acme_accounts').select('key').where('directory_url', '=', directoryUrl).executeTakeFirstOrThrow();
      return box.open(row.key);
    },

    async putChallenge(token, keyAuthorization, expiresAt) {
      await db.deleteFrom('acme_challenges').where('expires_at', '<', now()).execute();
      await db
        .insertInto('acme_challenges')
        .values({ token, key_authorization: keyAuthorization, expires_at: expiresAt })
        .onConflict((oc) => oc.column('token').doUpdateSet({ key_authorization: keyAuthorization, expires_at: expiresAt }))
        .execute();
    },

    async challenge(token) {
      const row = await db
        .selectFrom('acme_challenges')
        .select('key_authorization')
        .where('token', '=', token)
        .where('expires_at', '>', now())
        .executeTakeFirst();
      return row?.key_authorization ?? null;
    },

    async removeChallenge(token) {
      await db.deleteFrom('acme_challenges').where('token', '=', token).execute();
    },
  };
}
