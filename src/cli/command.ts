// The shape of a `postern` subcommand. Each capability exports its commands as an array; cli.ts
// lists those arrays (an explicit registry). Commands print JSON on stdout.
import type { App } from '../app.js';

export type OptionSpec = Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }>;
export type ArgValues = Record<string, string | boolean | string[] | undefined>;

export interface Command {
  /** Words that select the command, e.g. 'key create'. */
  name: string;
  usage: string;
  summary: string;
  options?: OptionSpec;
  /** Accept unknown --name value flags (provider settings). */
  loose?: boolean;
  run(app: App, args: { values: ArgValues; positionals: string[] }): Promise<unknown>;
}

/** Thrown for a missing or malformed argument; printed with the command's usage, exit code 2. */
export class UsageError extends Error {}

export function required(values: ArgValues, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

export function optional(values: ArgValues, name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}
