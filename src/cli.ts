// The `postern` command: serve, migrate, and the management commands each capability registers.
// The command line is read before anything else happens: `--help` (or `-h`) on any command, and a
// group word alone (`postern key`), answer with usage text without loading the configuration or
// touching the data directory or the database.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from './app.js';
import { checkDataDir } from './start-up-checks.js';
import { backupCommands } from './cli/backup.js';
import { readyCommands } from './cli/ready.js';
import { secretsCommands } from './cli/secrets.js';
import { CommandFailure, UsageError, type Command, type CommandInfo, type Io, type SetupCommand } from './cli/command.js';
import { openExistingDatabase } from './cli/database.js';
import { databaseFailure, describeDatabase } from './db/open-failure.js';
import { ExitFailure } from './lib/exit-failure.js';
import { commandHelp, groupHelp, groupOf, overview } from './cli/help.js';
import { ConfigError, databaseTarget, loadConfig, type Config } from './config.js';
import { openDatabase, type DatabaseHandle } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { AppError } from './lib/errors.js';
import { createLogger } from './lib/logger.js';
import { serve } from './main.js';
import { connectionCommands } from './cli/connections.js';
import { doctorCommands } from './cli/doctor.js';
import { warmUpCommands } from './cli/warm-up.js';
import { domainCommands } from './cli/domains.js';
import { forwardingCommands } from './cli/forwarding.js';
import { nodeCommands } from './cli/nodes.js';
import { certificateCommands } from './cli/certificates.js';
import { queueCommands } from './cli/queue.js';
import { operatorCommands } from './cli/operators.js';
import { suppressionCommands } from './cli/suppressions.js';
import { smtpCredentialCommands } from './cli/smtp-credentials.js';
import { templateCommands } from './cli/templates.js';
import { webhookCommands } from './cli/webhooks.js';
import { workspaceCommands } from './cli/workspaces.js';

const stdio: Io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };

/** Names the database on stderr (`postern: database …`) unless log.level is warn or quieter. */
function sayDatabase(config: Config, io: Io): void {
  if (['info', 'debug', 'trace'].includes(config.log.level)) io.err(`postern: database ${describeDatabase(databaseTarget(config))}\n`);
}

// serve and migrate run on the configuration alone (they create the database), and so do backup
// and restore (they copy it whole).
const setupCommands: SetupCommand[] = [
  {
    name: 'serve',
    usage: '',
    summary: 'run the daemon (HTTP API, SMTP listener, workers); creates and migrates the database',
    run: (config) => serve(config),
  },
  {
    name: 'migrate',
    usage: '',
    summary: 'apply database migrations (creating the database) and exit',
    run: async (config, io) => {
      const target = databaseTarget(config);
      // The data directory too, on PostgreSQL as well: the daemon keeps its keys there.
      checkDataDir(config);
      let handle: DatabaseHandle | null = null;
      try {
        handle = openDatabase(target);
        const applied = await migrateToLatest(handle.db);
        sayDatabase(config, io);
        io.out(JSON.stringify({ applied }) + '\n');
        return 0;
      } catch (err) {
        throw databaseFailure(err, target) ?? err;
      } finally {
        await handle?.close();
      }
    },
  },
  ...backupCommands,
  ...readyCommands,
  ...secretsCommands,
];

// The management commands, an explicit registry: one file per command group in cli/.
const appCommands: Command[] = [
  ...workspaceCommands,
  ...nodeCommands,
  ...certificateCommands,
  ...queueCommands,
  ...suppressionCommands,
  ...templateCommands,
  ...connectionCommands,
  ...domainCommands,
  ...doctorCommands,
  ...warmUpCommands,
  ...webhookCommands,
  ...smtpCredentialCommands,
  ...forwardingCommands,
  ...operatorCommands,
];

/** Every command, in the order `postern --help` lists them. */
export const COMMANDS: readonly CommandInfo[] = [...setupCommands, ...appCommands];

const isHelp = (arg: string) => arg === '--help' || arg === '-h';

const usageLine = (c: CommandInfo) => `usage: postern ${c.name}${c.usage ? ` ${c.usage}` : ''}\n`;

/** The command line without the global options: `--config FILE` and `--help` may stand anywhere. */
function globalOptions(argv: string[]): { file?: string; help: boolean; rest: string[] } {
  let file: string | undefined;
  let help = false;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    if (arg === '--config' || arg.startsWith('--config=')) {
      const value = arg === '--config' ? argv[++i] : arg.slice('--config='.length);
      if (value === undefined || value === '' || value.startsWith('-')) throw new UsageError('--config needs a file name');
      file = value;
    } else if (isHelp(arg)) {
      help = true;
    } else {
      rest.push(arg);
    }
  }
  return { file, help, rest };
}

/** The command the words select (the longest name that matches), if any. */
function findCommand(words: string[]): CommandInfo | undefined {
  return COMMANDS.filter((c) => c.name.split(' ').every((w, i) => words[i] === w)).sort((a, b) => b.name.length - a.name.length)[0];
}

const isGroup = (word: string | undefined) => word !== undefined && COMMANDS.some((c) => c.name.includes(' ') && groupOf(c) === word);

/** Prints the help the words ask for; 0, or 2 when they name no command. */
function printHelp(words: string[], io: Io): number {
  if (words.length === 0) {
    io.out(overview(COMMANDS));
    return 0;
  }
  const command = findCommand(words);
  if (command && command.name.split(' ').length === words.length) {
    io.out(commandHelp(command));
    return 0;
  }
  if (!command && words.length === 1 && isGroup(words[0])) {
    io.out(groupHelp(words[0], COMMANDS));
    return 0;
  }
  io.err(`postern: unknown command ${words.join(' ')}\n\n${overview(COMMANDS)}`);
  return 2;
}

/** Runs one invocation; returns the exit code (2 for configuration and usage errors). */
export async function main(argv: string[], env: NodeJS.ProcessEnv, io: Io = stdio): Promise<number> {
  let line;
  try {
    line = globalOptions(argv);
  } catch (err) {
    io.err(`postern: ${(err as Error).message}\n`);
    return 2;
  }
  const { file, rest } = line;
  if (rest.length === 0) {
    io.out(overview(COMMANDS));
    return line.help ? 0 : 2;
  }
  if (rest[0] === 'help') return printHelp(rest.slice(1), io);

  const command = findCommand(rest);
  if (!command) {
    if (rest.length === 1 && isGroup(rest[0])) {
      // A group word alone lists the group's commands: the answer to `--help`, a usage error without.
      io.out(groupHelp(rest[0], COMMANDS));
      return line.help ? 0 : 2;
    }
    const hint = isGroup(rest[0]) ? groupHelp(rest[0], COMMANDS) : overview(COMMANDS);
    io.err(`postern: unknown command ${rest.join(' ')}\n\n${hint}`);
    return 2;
  }
  if (line.help) {
    io.out(commandHelp(command));
    return 0;
  }

  const setup = setupCommands.find((c) => c === command);
  const app = appCommands.find((c) => c === command);
  const words = command.name.split(' ').length;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest.slice(words),
      options: (setup ?? app)?.options ?? {},
      allowPositionals: !setup || setup.positionals === true,
      strict: !app?.loose,
    });
  } catch (err) {
    io.err(`postern ${command.name}: ${(err as Error).message}\n${usageLine(command)}`);
    return 2;
  }

  try {
    const config = loadConfig({ env, file, warn: (message) => io.err(`postern: warning: ${message}\n`) });
    if (setup)
      return await setup.run(config, io, { values: parsed.values as Record<string, string>, positionals: parsed.positionals, env });
    return await runAppCommand(app!, config, { values: parsed.values as Record<string, string>, positionals: parsed.positionals }, io);
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(`postern: ${err.message}\n`);
      return 2;
    }
    if (err instanceof ExitFailure) {
      io.err(`postern: ${err.message}\n`);
      return err.exitCode;
    }
    if (err instanceof UsageError) {
      io.err(`postern ${command.name}: ${err.message}\n${usageLine(command)}`);
      return 2;
    }
    throw err;
  }
}

async function runAppCommand(
  command: Command,
  config: Config,
  args: { values: Record<string, string>; positionals: string[] },
  io: Io,
): Promise<number> {
  // Never a database of its own: only serve and migrate create one.
  const handle = await openExistingDatabase(databaseTarget(config));
  // Nor a data directory: the app would generate a secrets key there, one the daemon never reads,
  // and seal provider credentials with it.
  const dataDir = path.resolve(config.dataDir);
  if (!config.secrets.key && !existsSync(dataDir)) {
    await handle.close();
    throw new CommandFailure(
      `no data directory at ${dataDir} (dataDir, POSTERN_DATA_DIR), where the daemon keeps the key that encrypts provider credentials: ` +
        `run "postern migrate" to create it, or point this command at the daemon's (--config, dataDir, or secrets.key)`,
    );
  }
  sayDatabase(config, io);
  // The CLI logs only warnings, to stderr, so stdout stays pure JSON.
  const log = createLogger(config.log.level === 'silent' ? 'silent' : 'warn', process.stderr);
  let app;
  try {
    app = await createApp({ config, log, database: handle });
  } catch (err) {
    await handle.close();
    throw err;
  }
  try {
    const result = await command.run(app, args);
    if (command.print) return command.print(result, io, args.values);
    io.out(JSON.stringify(result, null, 2) + '\n');
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`postern ${command.name}: ${err.message}\n${usageLine(command)}`);
      return 2;
    }
    if (err instanceof AppError) {
      io.err(JSON.stringify({ error: { code: err.code, message: err.message, ...err.extra } }) + '\n');
      return 1;
    }
    throw err;
  } finally {
    await app.stop();
    await handle.close();
  }
}
