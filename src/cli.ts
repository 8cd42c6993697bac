// The `postern` command: serve, migrate, and the management commands each capability registers.
import { parseArgs } from 'node:util';
import { createApp } from './app.js';
import { UsageError, type Command } from './cli/command.js';
import { ConfigError, loadConfig } from './config.js';
import { openDatabase } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { databaseTarget } from './config.js';
import { AppError } from './lib/errors.js';
import { createLogger } from './lib/logger.js';
import { serve } from './main.js';
import { workspaceCommands } from './workspaces/cli.js';
import { suppressionCommands } from './suppressions/cli.js';
import { templateCommands } from './templates/cli.js';
import { connectionCommands } from './connections/cli.js';
import { domainCommands } from './domains/cli.js';
import { webhookCommands } from './webhooks/cli.js';
import { forwardingCommands } from './forwarding/cli.js';

const commands: Command[] = [...workspaceCommands];
commands.push(...suppressionCommands);
commands.push(...templateCommands);
commands.push(...connectionCommands);
commands.push(...domainCommands);
commands.push(...webhookCommands);
commands.push(...forwardingCommands);

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

const stdio: Io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };

function help(): string {
  const lines = [
    'Usage: postern <command> [options]',
    '',
    'Commands:',
    '  serve                          run the daemon (HTTP API, SMTP listener, workers)',
    '  migrate                        apply database migrations and exit',
    ...commands.map((c) => `  ${(c.name + ' ' + c.usage).padEnd(30)} ${c.summary}`),
    '',
    'Global options:',
    '  --config FILE                  JSON config merged over config/default.json',
    '  --help                         this text',
    '',
    'Every setting can also be given as a POSTERN_* environment variable (see README).',
  ];
  return lines.join('\n') + '\n';
}

/** Runs one invocation; returns the exit code (2 for configuration and usage errors). */
export async function main(argv: string[], env: NodeJS.ProcessEnv, io: Io = stdio): Promise<number> {
  // The config file may be named anywhere on the line.
  let file: string | undefined;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--config') file = argv[++i];
    else if (argv[i].startsWith('--config=')) file = argv[i].slice('--config='.length);
    else rest.push(argv[i]);
  }
  if (rest.length === 0 || rest[0] === '--help' || rest[0] === '-h' || rest[0] === 'help') {
    io.out(help());
    return rest.length === 0 ? 2 : 0;
  }

  let config;
  try {
    config = loadConfig({ env, file });
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(`postern: ${err.message}\n`);
      return 2;
    }
    throw err;
  }

  if (rest[0] === 'serve') return serve(config);
  if (rest[0] === 'migrate') {
    const handle = openDatabase(databaseTarget(config));
    try {
      const applied = await migrateToLatest(handle.db);
      io.out(JSON.stringify({ applied }) + '\n');
      return 0;
    } finally {
      await handle.close();
    }
  }

  const command = commands.filter((c) => c.name.split(' ').every((w, i) => rest[i] === w)).sort((a, b) => b.name.length - a.name.length)[0];
  if (!command) {
    io.err(`postern: unknown command ${rest.join(' ')}\n\n${help()}`);
    return 2;
  }
  const words = command.name.split(' ').length;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest.slice(words),
      options: command.options ?? {},
      allowPositionals: true,
      strict: !command.loose,
    });
  } catch (err) {
    io.err(`postern ${command.name}: ${(err as Error).message}\nusage: postern ${command.name} ${command.usage}\n`);
    return 2;
  }

  // The CLI logs only warnings, to stderr, so stdout stays pure JSON.
  const log = createLogger(config.log.level === 'silent' ? 'silent' : 'warn', process.stderr);
  const app = await createApp({ config, log });
  try {
    const result = await command.run(app, { values: parsed.values as Record<string, string>, positionals: parsed.positionals });
    io.out(JSON.stringify(result, null, 2) + '\n');
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`postern ${command.name}: ${(err as Error).message}\nusage: postern ${command.name} ${command.usage}\n`);
      return 2;
    }
    if (err instanceof AppError) {
      io.err(JSON.stringify({ error: { code: err.code, message: err.message, ...err.extra } }) + '\n');
      return 1;
    }
    throw err;
  } finally {
    await app.stop();
  }
}
