// Start-up checks: what the daemon needs from the machine and its settings, checked before it
// opens or listens on anything, each failure said in one line naming the setting (a ConfigError,
// exit 2): the data directory and the SQLite file, the daily jobs' cron expression, and the
// listeners' addresses.
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse, validateDetailed } from 'node-cron';
import { ConfigError, databaseTarget, envName, invalidSetting, type Config } from './config.js';
import { cronFields, type CronFields } from './lib/cron.js';
import { ownershipAdvice, privateDirectory } from './lib/private-dir.js';

const FS_REASONS: Record<string, string> = {
  EACCES: 'permission denied to the user running Postern',
  EPERM: 'permission denied to the user running Postern',
  EROFS: 'the file system is read-only',
  ENOTDIR: 'part of the path is a file, not a directory',
  EEXIST: 'it is a file, not a directory',
  ENOSPC: 'no space left on the device',
};

function usableDirectory(dir: string, setting: string[]): void {
  try {
    // 0700 when made here: it holds the keys and the mail. One that exists keeps the mode it has.
    privateDirectory(dir);
    if (!statSync(dir).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'EEXIST' });
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const advice = code === 'EACCES' || code === 'EPERM' ? ownershipAdvice(dir) : '';
    throw new ConfigError(
      `cannot keep data in ${dir} (${setting.join('.')}, ${envName(setting)}): ${FS_REASONS[code] ?? (err as Error).message}${advice}`,
    );
  }
}

/**
 * `inbound.purgeCron` read by node-cron (here, beside the composition root, not in config.ts:
 * node-cron is an adapter's package), as the fields lib/cron.ts times the daily jobs by. A
 * ConfigError (exit 2) names the setting and what is wrong with the expression.
 */
export function purgeSchedule(expression: string): CronFields {
  const check = validateDetailed(expression);
  const fields = check.valid ? cronFields(parse(expression)) : { error: `not a cron expression: ${check.errors[0]?.message ?? 'invalid'}` };
  if ('error' in fields) throw new ConfigError(invalidSetting(['inbound', 'purgeCron'], fields.error));
  return fields;
}

/**
 * Makes sure the daemon can keep its state before it creates any: the data directory (and the
 * SQLite file's, when `databaseUrl` puts it elsewhere) exists or can be made, and is writable.
 * Throws a ConfigError naming the setting.
 */
export function checkDataDir(config: Config): void {
  const dataDir = path.resolve(config.dataDir);
  usableDirectory(dataDir, ['dataDir']);
  const target = databaseTarget(config);
  if (target.dialect !== 'sqlite') return;
  const dbDir = path.dirname(target.file);
  if (dbDir !== dataDir) usableDirectory(dbDir, ['databaseUrl']);
  try {
    if (existsSync(target.file)) accessSync(target.file, constants.R_OK | constants.W_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const setting = dbDir === dataDir && config.databaseUrl === '' ? ['dataDir'] : ['databaseUrl'];
    const advice = code === 'EACCES' || code === 'EPERM' ? ownershipAdvice(target.file) : '';
    throw new ConfigError(
      `cannot write the database ${target.file} (${setting.join('.')}, ${envName(setting)}): ${FS_REASONS[code] ?? (err as Error).message}${advice}`,
    );
  }
}

const LISTEN_REASONS: Record<string, string> = {
  EADDRINUSE: 'the address is already in use (another Postern, or another server?)',
  EACCES: 'permission denied (a port below 1024 needs root or CAP_NET_BIND_SERVICE)',
  EADDRNOTAVAIL: 'no network interface of this machine has that address',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name does not resolve',
};

/** Runs a listener's listen(); its failure becomes a ConfigError naming the address and settings. */
export async function listening<T>(
  listener: 'http' | 'https' | 'smtp' | 'metrics' | 'submission',
  at: { host: string; port: number },
  listen: () => Promise<T>,
  ports: string[] = [`${listener}.port`],
): Promise<T> {
  try {
    return await listen();
  } catch (err) {
    const { code = '', syscall = '' } = err as NodeJS.ErrnoException;
    // Anything but the socket's refusal (a TLS file that cannot be read…) keeps its own error.
    if (!(code in LISTEN_REASONS) || !['listen', 'bind', 'getaddrinfo'].includes(syscall)) throw err;
    const address = `${at.host.includes(':') ? `[${at.host}]` : at.host}:${at.port}`;
    const keys = [`${listener}.host`, ...ports];
    const settings = `${keys.join(', ')}: ${keys.map((k) => envName(k.split('.'))).join(', ')}`;
    throw new ConfigError(`cannot listen for ${listener.toUpperCase()} on ${address} (${settings}): ${LISTEN_REASONS[code]}`);
  }
}
