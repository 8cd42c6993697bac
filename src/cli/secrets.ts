// `postern secrets rotate`: a new `secrets.key`, and everything sealed under the old one (provider
// credentials, DKIM private keys) sealed again under the new one in one transaction. Every daemon
// must be stopped: a running one keeps the key it started with, so it would neither read what is
// sealed anew nor seal what it writes under the new key. The order survives a crash at any step:
// the new key is written beside the old (`secrets.key.new`) before the transaction; after the
// commit the old key is kept as `secrets.key.<time>.old` and the new one takes its name.
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { resealConnectionSecrets } from '../channels/index.js';
import { databaseTarget, type Config } from '../config.js';
import { databaseFailure, type HeldLock, holdExclusive, LockBusyError, openDatabase } from '../db/index.js';
import { resealDkimKeys } from '../domains/index.js';
import { createSecretBox, loadSecretsKey } from '../lib/secret-box.js';
import { refuseLiveNodes } from './backup.js';
import { CommandFailure, type SetupCommand } from './command.js';
import { openExistingDatabase } from './database.js';

const STOP_FIRST = 'stop every daemon (and any postern command) first, then rotate';

function exclusively(config: Config): HeldLock {
  const target = databaseTarget(config);
  if (target.dialect !== 'sqlite') return { release: () => {} };
  try {
    return holdExclusive(target.file);
  } catch (err) {
    if (err instanceof LockBusyError) throw new CommandFailure(`the database ${target.file} is in use by a running Postern: ${STOP_FIRST}`);
    throw err;
  }
}

async function rotate(config: Config): Promise<{ connections: number; dkimKeys: number; oldKey: string; key: string }> {
  if (config.secrets.key) {
    throw new CommandFailure(
      'secrets.key is set in the configuration, which postern cannot rewrite: leave it empty to keep the key in <dataDir>/secrets.key, then rotate',
    );
  }
  const dataDir = path.resolve(config.dataDir);
  const keyFile = path.join(dataDir, 'secrets.key');
  const pending = `${keyFile}.new`;
  if (existsSync(pending)) {
    throw new CommandFailure(
      `${pending} is left from a rotation that did not finish: if the daemon starts with secrets.key, delete it; ` +
        'if the daemon cannot read its credentials, the rotation committed: move it over secrets.key',
    );
  }
  // Like every management command: a database that is not there (or empty) is named first.
  await (await openExistingDatabase(databaseTarget(config))).close();
  if (!existsSync(keyFile)) throw new CommandFailure(`no key at ${keyFile}: nothing is sealed yet, there is nothing to rotate`);
  await refuseLiveNodes(config, 'rotate');
  const lock = exclusively(config);
  const target = databaseTarget(config);
  try {
    const from = createSecretBox(loadSecretsKey(config));
    const fresh = randomBytes(32);
    const to = createSecretBox(fresh);
    writeFileSync(pending, fresh.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
    const handle = openDatabase(target, { sharedLock: false });
    let counts: { connections: number; dkimKeys: number };
    try {
      counts = await handle.db.transaction().execute(async (trx) => ({
        connections: await resealConnectionSecrets(trx, from, to),
        dkimKeys: await resealDkimKeys(trx, from, to),
      }));
    } catch (err) {
      rmSync(pending, { force: true });
      throw databaseFailure(err, target) ?? new CommandFailure(`nothing rotated: ${(err as Error).message}`);
    } finally {
      await handle.close();
    }
    const oldKey = path.join(dataDir, `secrets.key.${new Date().toISOString().replace(/[:.]/g, '-')}.old`);
    copyFileSync(keyFile, oldKey);
    renameSync(pending, keyFile);
    return { ...counts, oldKey, key: keyFile };
  } finally {
    lock.release();
  }
}

export const secretsCommands: SetupCommand[] = [
  {
    name: 'secrets rotate',
    usage: '',
    summary:
      'replace secrets.key with a new key and re-encrypt every provider credential and DKIM key under it (every daemon stopped); the old key is kept beside it',
    run: async (config, io) => {
      io.out(JSON.stringify(await rotate(config)) + '\n');
      return 0;
    },
  },
];
