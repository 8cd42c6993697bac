// `postern backup FILE` and `postern restore FILE [--force]`: one file holding a consistent copy of
// the embedded database (made while the daemon runs) and the key that seals provider credentials.
// On PostgreSQL the database's own tools do it: the commands print the exact pg_dump / pg_restore
// line for the configured URL instead.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { databaseTarget, type Config } from '../config.js';
import { backupSqlite, restoreSqlite } from '../db/backup.js';
import { CommandFailure, UsageError, type SetupCommand } from './command.js';

function fileArg(positionals: string[]): string {
  if (positionals.length !== 1) throw new UsageError('name one backup file');
  return path.resolve(positionals[0]);
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

export const backupCommands: SetupCommand[] = [
  {
    name: 'backup',
    usage: 'FILE [--force]',
    summary: 'copy the database (and the secrets key) to FILE while the daemon runs; on PostgreSQL, print the pg_dump command',
    options: { force: { type: 'boolean' } },
    positionals: true,
    run: async (config, io, { values, positionals }) => {
      const file = fileArg(positionals);
      const target = databaseTarget(config);
      if (target.dialect === 'postgres') postgresOnly(config, 'backup', file);
      if (existsSync(file) && values.force !== true) throw new CommandFailure(`${file} exists; add --force to replace it`);
      if (!existsSync(target.file)) {
        throw new CommandFailure(`nothing to back up: no database at ${target.file} (dataDir, POSTERN_DATA_DIR, or --config)`);
      }
      const result = await backupSqlite(target.file, path.resolve(config.dataDir), file);
      io.out(JSON.stringify(result) + '\n');
      return 0;
    },
  },
  {
    name: 'restore',
    usage: 'FILE [--force]',
    summary: 'put a backup back (stop the daemon first); refuses to replace a database that holds data without --force',
    options: { force: { type: 'boolean' } },
    positionals: true,
    run: (config, io, { values, positionals }) => {
      const file = fileArg(positionals);
      const target = databaseTarget(config);
      if (target.dialect === 'postgres') postgresOnly(config, 'restore', file);
      try {
        const result = restoreSqlite(file, target.file, path.resolve(config.dataDir), values.force === true);
        io.out(JSON.stringify(result) + '\n');
        return Promise.resolve(0);
      } catch (err) {
        throw new CommandFailure((err as Error).message);
      }
    },
  },
];
