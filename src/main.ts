// `postern serve`: config → app → listeners, one ready line, and an orderly stop on SIGTERM/SIGINT
// (a second signal exits at once). On the first start it creates the workspace `default` with one
// live and one test key, and hands the keys to the operator once: on the terminal when stderr is
// one, otherwise (systemd, Docker, a pipe) in a 0600 file in the data dir, so they never sit in
// journald or a container log.
import { unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { App } from './app.js';
import { createApp } from './app.js';
import { checkDataDir } from './start-up-checks.js';
import { publicUrlWarning } from './public-url.js';
import { databaseTarget, type Config } from './config.js';
import { databaseFailure } from './db/open-failure.js';
import { AppError } from './lib/errors.js';
import { LAUNCH_FLAGS, launchedWithFlags, sizeHeaps } from './lib/heap-sizes.js';
import { writeLine, type Logger } from './lib/logger.js';

/** Where the first start writes its keys when stderr is not a terminal. */
export const BOOTSTRAP_KEYS_FILE = 'bootstrap-keys.txt';

const RECOVERY = 'Lost them? Create another: postern key create --workspace default --env live (or test).';
const SETUP_RECOVERY = 'Link lost or expired? Create an owner: postern operator create --email E --role owner.';

export interface BootstrapKeys {
  live: string;
  test: string;
}

/** What a first start hands over once: the default workspace's keys, the dashboard's setup link. */
export interface FirstStart {
  keys?: BootstrapKeys;
  /** The one-time link that creates the first dashboard owner. */
  setupLink?: { url: string; validFor: string };
}

/**
 * Hands the first start's keys to the operator, once: printed to stderr when it is a terminal,
 * else written to `<dataDir>/bootstrap-keys.txt` (mode 0600) with only its path in the log.
 * Returns the file written, or null when they were printed.
 */
export function announceBootstrapKeys(
  first: BootstrapKeys | FirstStart,
  opts: { stderrIsTTY: boolean; dataDir: string; writeStderr(text: string): void; log: Logger },
): string | null {
  const { keys, setupLink } = 'live' in first ? { keys: first, setupLink: undefined } : first;
  const lines: string[] = [];
  if (keys) {
    lines.push(
      'Created workspace "default" with two API keys. They are shown only this once:',
      `  live: ${keys.live}`,
      `  test: ${keys.test}`,
    );
  }
  if (setupLink) {
    lines.push(`Open the dashboard and create its first owner with this link (once, within ${setupLink.validFor}):`, `  ${setupLink.url}`);
  }
  if (lines.length === 0) return null;
  const recovery = [keys ? RECOVERY : null, setupLink ? SETUP_RECOVERY : null].filter((l): l is string => l !== null);
  if (opts.stderrIsTTY) {
    // Outside the structured log, so the secrets never enter log storage.
    opts.writeStderr(['', ...lines, ...recovery, ''].join('\n') + '\n');
    return null;
  }
  const file = path.resolve(opts.dataDir, BOOTSTRAP_KEYS_FILE);
  try {
    try {
      // A file left by an earlier database holds dead keys: replace it, never write through it.
      unlinkSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    writeFileSync(file, [...lines, 'Copy them, then delete this file.', ...recovery, ''].join('\n'), { mode: 0o600, flag: 'wx' });
  } catch (err) {
    opts.log.error({ err, file }, `could not write the first-start secrets; ${recovery.join(' ')}`);
    return null;
  }
  const what = [keys ? 'its two API keys' : null, setupLink ? 'the dashboard setup link' : null].filter(Boolean).join(' and ');
  opts.log.warn(
    { file },
    `${keys ? 'created workspace "default"; ' : ''}${what} are in ${file} (mode 0600): copy them, then delete the file`,
  );
  return file;
}

/**
 * The first start's secrets: the workspace `default` and its keys when there is no workspace, and
 * a one-time dashboard setup link when there is no operator (and no unused link still valid).
 */
async function bootstrapFirstStart(app: App): Promise<void> {
  let keys: BootstrapKeys | undefined;
  if ((await app.workspaces.count()) === 0) {
    // Nodes of a cluster started together all see no workspace; the unique slug lets one make it
    // (and its keys), and the others go on without keys to show.
    const ws = await app.workspaces.create({ slug: 'default', name: 'Default workspace', plan: 'custom' }).catch((err: unknown) => {
      if (err instanceof AppError && err.code === 'already_exists') return null;
      throw err;
    });
    if (ws) {
      const live = await app.keys.create(ws, { env: 'live', name: 'bootstrap live key' });
      const test = await app.keys.create(ws, { env: 'test', name: 'bootstrap test key' });
      keys = { live: live.secret, test: test.secret };
    }
  }
  const token = await app.operators.issueSetupToken();
  const setupLink = token
    ? { url: `${app.publicUrl()}/dashboard/setup?token=${token}`, validFor: formatDuration(app.config.dashboard.setupLinkTtl) }
    : undefined;
  announceBootstrapKeys(
    { keys, setupLink },
    {
      stderrIsTTY: process.stderr.isTTY === true,
      dataDir: app.config.dataDir,
      writeStderr: (text) => void process.stderr.write(text),
      log: app.log,
    },
  );
}

function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} hour${ms === 3_600_000 ? '' : 's'}`;
  return `${Math.round(ms / 60_000)} minutes`;
}

/**
 * Runs the daemon until a signal stops it. What the machine must provide is checked before the
 * first-start keys are made: the data directory first, then both listeners (a ConfigError, exit 2).
 */
export async function serve(config: Config): Promise<number> {
  checkDataDir(config);
  sizeHeaps(config.memory);
  let app: App;
  try {
    app = await createApp({ config });
  } catch (err) {
    // A PostgreSQL database that does not exist, a server down: one line, not a stack trace.
    throw databaseFailure(err, databaseTarget(config)) ?? err;
  }
  let ports;
  try {
    ports = await app.start();
  } catch (err) {
    await app.stop();
    throw err;
  }
  await bootstrapFirstStart(app);
  const warning = publicUrlWarning(config, app.publicUrl());
  if (warning) app.log.warn({ publicUrl: app.publicUrl() }, warning);
  if (!launchedWithFlags(process.execArgv, process.env.NODE_OPTIONS)) {
    app.log.info(
      { flags: LAUNCH_FLAGS },
      `started without ${LAUNCH_FLAGS.join(' ')}: the event loop's heap runs at V8's own size, about 20 MiB more at peak (bin/postern.js and the shipped launchers pass it)`,
    );
  }
  // The ready line is printed whatever the log level: supervisors and tests wait for it. It goes
  // through the logger's stream, so it cannot overtake the bootstrap and public-URL lines above.
  writeLine(
    app.log,
    JSON.stringify({
      level: 30,
      time: Date.now(),
      name: 'postern',
      msg: 'ready',
      http: ports.http,
      // The HTTPS listener's port, or null when https.enabled is false.
      https: ports.https,
      smtp: ports.smtp,
      // The metrics listener's port, or null when metrics.enabled is false.
      metrics: ports.metrics,
      // The submission listeners' ports (587 with STARTTLS, 465 implicit TLS or null when
      // submission.tlsPort is 0), or null when submission.enabled is false.
      submission: ports.submission,
      publicUrl: app.publicUrl(),
    }),
  );

  return new Promise<number>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      signals += 1;
      if (signals > 1) process.exit(130);
      app.log.info({ signal }, 'stopping');
      app.stop().then(
        () => {
          app.log.info('stopped');
          resolve(0);
        },
        (err) => {
          app.log.error({ err }, 'stop failed');
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}
