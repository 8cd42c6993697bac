// `postern backup FILE` and `postern restore FILE [--force]`: one file holding a consistent copy of
// the embedded database (made while the daemon runs) and the key that seals credentials and DKIM keys,
// sealed with a passphrase on request. The passphrase comes from a file or the environment, never
// the command line (which any user of the machine can read in the process list).
// On PostgreSQL the database's own tools do it: the commands print the exact pg_dump / pg_restore
// line for the configured URL instead.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { databaseTarget, type Config } from '../config.js';
import { liveNodes } from '../cluster/index.js';
import { backupSqlite, databaseFailure, openDatabase, restoreSqlite } from '../db/index.js';
import { CommandFailure, UsageError, type ArgValues, type SetupCommand } from './command.js';

function fileArg(positionals: string[]): string {
  if (positionals.length !== 1) throw new UsageError('name one backup file');
  return path.resolve(positionals[0]);
}

/** The environment variable a backup passphrase may come from. */
const PASSPHRASE_ENV = 'POSTERN_BACKUP_PASSPHRASE';

/**
 * The passphrase of `--passphrase-file` (its first line, without the line ending) or of
 * POSTERN_BACKUP_PASSPHRASE; undefined when neither is given.
 */
function passphraseOf(values: ArgValues, env: NodeJS.ProcessEnv): string | undefined {
  const file = values['passphrase-file'];
  let phrase: string | undefined;
  if (typeof file === 'string') {
    try {
      phrase = readFileSync(file, 'utf8').split(/\r?\n/)[0];
    } catch (err) {
      throw new CommandFailure(`cannot read the passphrase file ${file}: ${(err as Error).message}`);
    }
    if (phrase === '') throw new CommandFailure(`the passphrase file ${file} is empty`);
  } else if (env[PASSPHRASE_ENV] !== undefined) {
    phrase = env[PASSPHRASE_ENV];
    if (phrase === '') throw new CommandFailure(`${PASSPHRASE_ENV} is empty`);
  }
  return phrase;
}

/** Shell-quoted for a POSIX shell. */
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function postgresOnly(config: Config, what: 'backup' | 'restore', file: string): never {
  const url = config.databaseUrl;
  const key = config.secrets.key
    ? 'secrets.key is set in the configuration'
    : `keep ${path.resolve(config.dataDir, 'secrets.key')} with it`;
  const line =
    what === 'backup'
      ? `pg_dump --format=custom --file=${quote(file)} ${quote(url)}`
      : `pg_restore --clean --if-exists --no-owner --dbname=${quote(url)} ${quote(file)}`;
  throw new CommandFailure(`the database is PostgreSQL: ${what} it with its own tools (${key}):\n  ${line}`);
}

/**
 * Refuses `what` (a restore, a key rotation) on PostgreSQL while nodes are registered and beating:
 * pg_restore --clean under a running cluster loses what it accepts meanwhile, and a node keeps the
 * key it started with. A database that does not exist yet, or has no node table, has no node to stop.
 */
export async function refuseLiveNodes(config: Config, what: string): Promise<void> {
  const target = databaseTarget(config);
  if (target.dialect !== 'postgres') return;
  const handle = openDatabase(target);
  let alive: { host: string; pid: number }[];
  try {
    alive = await liveNodes(handle.db, config.cluster.nodeTimeout, Date.now());
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === '3D000' || code === '42P01') return;
    const failure = databaseFailure(err, target);
    throw new CommandFailure(`cannot tell whether a node still uses the database: ${failure?.message ?? (err as Error).message}`);
  } finally {
    await handle.close();
  }
  if (alive.length > 0) {
    throw new CommandFailure(
      `the database is in use by ${alive.length} running node${alive.length === 1 ? '' : 's'} ` +
        `(${alive.map((n) => `pid ${n.pid} on ${n.host}`).join(', ')}; postern nodes): stop every node first, then ${what}; ` +
        '--force does not override this',
    );
  }
}

export const backupCommands: SetupCommand[] = [
  {
    name: 'backup',
    usage: 'FILE [--force] [--encrypt [--passphrase-file FILE]]',
    summary:
      'copy the database (and the secrets key) to FILE (mode 0600) while the daemon runs, sealed with a passphrase with --encrypt; on PostgreSQL, print the pg_dump command',
    options: { force: { type: 'boolean' }, encrypt: { type: 'boolean' }, 'passphrase-file': { type: 'string' } },
    positionals: true,
    run: async (config, io, { values, positionals, env }) => {
      const file = fileArg(positionals);
      const target = databaseTarget(config);
      if (values['passphrase-file'] !== undefined && values.encrypt !== true) throw new UsageError('--passphrase-file goes with --encrypt');
      const passphrase = values.encrypt === true ? passphraseOf(values, env) : undefined;
      if (values.encrypt === true && passphrase === undefined) {
        throw new UsageError(`--encrypt needs a passphrase: --passphrase-file FILE, or ${PASSPHRASE_ENV} in the environment`);
      }
      if (target.dialect === 'postgres') postgresOnly(config, 'backup', file);
      if (existsSync(file) && values.force !== true) throw new CommandFailure(`${file} exists; add --force to replace it`);
      if (!existsSync(target.file)) {
        throw new CommandFailure(`nothing to back up: no database at ${target.file} (dataDir, POSTERN_DATA_DIR, or --config)`);
      }
      const result = await backupSqlite(target.file, path.resolve(config.dataDir), file, passphrase);
      io.out(JSON.stringify(result) + '\n');
      return 0;
    },
  },
  {
    name: 'restore',
    usage: 'FILE [--force] [--passphrase-file FILE]',
    summary:
      'put a backup back (an encrypted one with its passphrase); refused while a daemon uses the database (--force or not), and over a database that holds data without --force',
    options: { force: { type: 'boolean' }, 'passphrase-file': { type: 'string' } },
    positionals: true,
    run: async (config, io, { values, positionals, env }) => {
      const file = fileArg(positionals);
      const target = databaseTarget(config);
      if (target.dialect === 'postgres') {
        await refuseLiveNodes(config, 'restore');
        postgresOnly(config, 'restore', file);
      }
      try {
        const result = await restoreSqlite(file, target.file, path.resolve(config.dataDir), {
          force: values.force === true,
          passphrase: passphraseOf(values, env),
        });
        io.out(JSON.stringify(result) + '\n');
        return 0;
      } catch (err) {
        throw new CommandFailure((err as Error).message);
      }
    },
  },
];
