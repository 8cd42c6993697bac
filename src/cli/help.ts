// The help texts of `postern`, built from the command registry so a command added there is
// documented here too: the overview (`postern --help`), one command (`postern key create --help`)
// and a group (`postern key`: the commands whose name starts with that word).
import type { CommandInfo } from './command.js';

const GLOBAL_OPTIONS = [
  'Global options:',
  '  --config FILE        JSON config merged over config/default.json (or POSTERN_CONFIG=FILE)',
  '  -h, --help           this text',
];

function table(rows: [string, string][]): string[] {
  const width = Math.min(32, Math.max(...rows.map(([left]) => left.length)) + 2);
  return rows.map(([left, right]) =>
    left.length + 2 > width ? `  ${left}\n  ${' '.repeat(width)}${right}` : `  ${left.padEnd(width)}${right}`,
  );
}

/** The group a command belongs to: the first word of its name. */
export const groupOf = (command: CommandInfo): string => command.name.split(' ')[0];

/** `postern --help`: every command with its summary. */
export function overview(commands: readonly CommandInfo[]): string {
  return [
    'Usage: postern <command> [options]',
    '',
    'Commands:',
    ...table(commands.map((c) => [c.name, c.summary])),
    '',
    ...GLOBAL_OPTIONS,
    '',
    "`postern <command> --help` shows a command's options. Every setting can also be given as a",
    'POSTERN_* environment variable (see docs/configuration.md).',
  ]
    .join('\n')
    .concat('\n');
}

/** `postern <command> --help`: its usage, what it does, and the global options. */
export function commandHelp(command: CommandInfo): string {
  return [`Usage: postern ${command.name}${command.usage ? ` ${command.usage}` : ''}`, '', `${command.summary}.`, '', ...GLOBAL_OPTIONS]
    .join('\n')
    .concat('\n');
}

/** `postern <group>`: the commands of the group, each with its usage. */
export function groupHelp(group: string, commands: readonly CommandInfo[]): string {
  const members = commands.filter((c) => groupOf(c) === group);
  return [
    `Usage: postern ${group} <command> [options]`,
    '',
    'Commands:',
    ...members.flatMap((c) => [`  postern ${c.name}${c.usage ? ` ${c.usage}` : ''}`, `      ${c.summary}`]),
    '',
    `\`postern ${group} <command> --help\` shows one command.`,
  ]
    .join('\n')
    .concat('\n');
}
