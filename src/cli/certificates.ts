// `postern certificate …`: the certificates Postern obtains by ACME (docs/install.md#https). The
// daemon renews them by itself; these commands show them, renew one now, or revoke one. A renewal
// started here is validated through the running daemon: the CA's request reaches its listener, which
// answers from the database where this command put the challenge.
import type { App } from '../app.js';
import { CommandFailure, required, type Command } from './command.js';

const acmeOn = (app: App) => {
  if (!app.config.acme.enabled)
    throw new CommandFailure('ACME is off: set acme.enabled (POSTERN_ACME_ENABLED=true) and restart the daemon');
};

export const certificateCommands: Command[] = [
  {
    name: 'certificate list',
    usage: '',
    summary: 'list the names Postern needs certificates for and what is kept for each: expiry, failures, the last error',
    run: async (app) => {
      const wanted = new Set(await app.certificates.wanted());
      const kept = await app.certificates.list();
      const names = [...new Set([...wanted, ...kept.map((k) => k.name)])].sort();
      return names.map((name) => {
        const k = kept.find((c) => c.name === name);
        return {
          name,
          wanted: wanted.has(name),
          notAfter: k?.notAfter ?? null,
          issuedAt: k?.issuedAt ?? null,
          failures: k?.failures ?? 0,
          lastError: k?.lastError ?? null,
          nextAttemptAt: k?.nextAttemptAt ?? null,
        };
      });
    },
  },
  {
    name: 'certificate renew',
    usage: '[--name N] [--force]',
    summary: 'obtain what is due now (with --name, that name; --force: even if not due and during back-off); needs the daemon running',
    options: { name: { type: 'string', multiple: true }, force: { type: 'boolean' } },
    run: async (app, { values }) => {
      acmeOn(app);
      const names = (values.name as string[] | undefined)?.filter(Boolean);
      const results = await app.certificates.check({ force: values.force === true, ...(names?.length ? { names } : {}) });
      const failed = results.filter((r) => r.outcome === 'failed');
      if (failed.length) throw new CommandFailure(failed.map((f) => `${f.name}: ${f.error}`).join('; '), 1);
      return results;
    },
  },
  {
    name: 'certificate revoke',
    usage: '--name N',
    summary: "revoke a name's certificate at the CA and drop it; the daemon obtains a new one at its next check",
    options: { name: { type: 'string' } },
    run: async (app, { values }) => {
      acmeOn(app);
      const name = required(values, 'name');
      await app.certificates.revoke(name).catch((err: unknown) => {
        throw new CommandFailure(`revoking ${name} failed: ${(err as Error).message}`, 1);
      });
      return { name, revoked: true };
    },
  },
];
