// The shape of a `postern` subcommand. Each capability exports its commands as an array; cli.ts
// lists those arrays (an explicit registry). Commands print JSON on stdout.
import type { App } from '../app.js';
import type { Config } from '../config.js';
import { ExitFailure } from '../lib/exit-failure.js';

export type OptionSpec = Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }>;
export type ArgValues = Record<string, string | boolean | string[] | undefined>;

/** What `--help` shows of a command. */
export interface CommandInfo {
  /** Words that select the command, e.g. 'key create'; the first word names its group. */
  name: string;
  usage: string;
  summary: string;
}

export interface Command extends CommandInfo {
  options?: OptionSpec;
  /** Accept unknown --name value flags (provider settings). */
  loose?: boolean;
  run(app: App, args: { values: ArgValues; positionals: string[] }): Promise<unknown>;
  /** Prints the result itself and returns the exit code (default: the result as JSON, exit 0). */
  print?(result: unknown, io: Io, values: ArgValues): number;
}

/** Thrown for a missing or malformed argument; printed with the command's usage, exit code 2. */
export class UsageError extends Error {}

/** A command's problem said in one line, with its exit code (lib/exit-failure.ts). */
export class CommandFailure extends ExitFailure {}

export function required(values: ArgValues, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

export function optional(values: ArgValues, name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

/** A command that runs on the configuration alone, without the app (serve, migrate, backup, restore). */
export interface SetupCommand extends CommandInfo {
  options?: OptionSpec;
  /** Takes positional arguments (a file). */
  positionals?: boolean;
  /** `env` is the environment the command was started with (a secret it may read from there). */
  run(config: Config, io: Io, args: { values: ArgValues; positionals: string[]; env: NodeJS.ProcessEnv }): Promise<number>;
}
