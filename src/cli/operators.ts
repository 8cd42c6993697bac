// `postern operator …` and `postern audit list`: the dashboard's accounts and its audit log from the
// shell. A password is read from standard input when it is not a terminal (`… < file`, a pipe),
// else prompted for twice without echo; it is never an argument, so it stays out of shell history
// and the process list.
import type { Command } from './command.js';
import { CommandFailure, optional, required, UsageError } from './command.js';

async function readStdinLine(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
}

function promptHidden(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    // Echo goes off before the question shows, so an answer typed at once is not echoed either.
    stdin.setRawMode(true);
    process.stderr.write(question);
    stdin.resume();
    let value = '';
    const onData = (data: Buffer) => {
      for (const ch of data.toString('utf8')) {
        if (ch === '\r' || ch === '\n') {
          stdin.setRawMode(false);
          stdin.pause();
          stdin.off('data', onData);
          process.stderr.write('\n');
          resolve(value);
          return;
        }
        if (ch === '\u0003') {
          stdin.setRawMode(false);
          reject(new CommandFailure('canceled', 1));
          return;
        }
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/** The new password: from stdin when it is not a terminal, else prompted for twice. */
async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) {
    const line = await readStdinLine();
    if (!line)
      throw new UsageError('give the password on standard input (echo … | postern operator create …), or run it in a terminal to be asked');
    return line;
  }
  const first = await promptHidden('Password: ');
  const again = await promptHidden('Password again: ');
  if (first !== again) throw new CommandFailure('the two passwords differ; nothing was changed', 1);
  return first;
}

const view = (o: { id: string; email: string; role: string; workspaces: string[]; createdAt: string }) => ({
  id: o.id,
  email: o.email,
  role: o.role,
  workspaces: o.workspaces,
  createdAt: o.createdAt,
});

export const operatorCommands: Command[] = [
  {
    name: 'operator create',
    usage: '--email E [--role owner|member] [--workspace SLUG]… (password on stdin, or prompted)',
    summary: 'create a dashboard operator: an owner runs every workspace, a member the ones named',
    options: { email: { type: 'string' }, role: { type: 'string' }, workspace: { type: 'string', multiple: true } },
    run: async (app, { values }) => {
      const email = required(values, 'email');
      const workspaces = (values.workspace as string[] | undefined) ?? [];
      // The first operator is the owner: with no owner, nobody could manage the others.
      const role = optional(values, 'role') ?? ((await app.operators.count()) === 0 ? 'owner' : 'member');
      const password = await readPassword();
      return view(await app.operators.create({ email, password, role, workspaces }));
    },
  },
  {
    name: 'operator list',
    usage: '',
    summary: 'list dashboard operators',
    run: async (app) => (await app.operators.list()).map(view),
  },
  {
    name: 'operator reset-password',
    usage: '--email E (password on stdin, or prompted)',
    summary: "set an operator's password; its sessions end",
    options: { email: { type: 'string' } },
    run: async (app, { values }) => {
      const email = required(values, 'email');
      await app.operators.byEmail(email);
      const password = await readPassword();
      const op = await app.operators.resetPassword(email, password);
      await app.audit.record({
        operator: { id: null, email: 'cli' },
        action: 'operator.reset-password',
        target: op.email,
        workspaceId: null,
        env: null,
        ip: 'local',
        outcome: 'ok',
      });
      return { email: op.email, reset: true };
    },
  },
  {
    name: 'operator reset-second-factor',
    usage: '--email E',
    summary:
      "remove an operator's second factors (authenticator app, recovery codes, passkeys: a lost phone); it signs in with the password and sets up a new one",
    options: { email: { type: 'string' } },
    run: async (app, { values }) => {
      const op = await app.operators.byEmail(required(values, 'email'));
      await app.factors.reset(op.id);
      await app.audit.record({
        operator: { id: null, email: 'cli' },
        action: 'operator.second-factor-reset',
        target: op.email,
        workspaceId: null,
        env: null,
        ip: 'local',
        outcome: 'ok',
      });
      return { email: op.email, secondFactor: false };
    },
  },
  {
    name: 'operator remove',
    usage: '--email E',
    summary: 'remove an operator and end its sessions (not the last owner)',
    options: { email: { type: 'string' } },
    run: async (app, { values }) => {
      const op = await app.operators.remove(required(values, 'email'));
      await app.audit.record({
        operator: { id: null, email: 'cli' },
        action: 'operator.remove',
        target: op.email,
        workspaceId: null,
        env: null,
        ip: 'local',
        outcome: 'ok',
      });
      return { email: op.email, removed: true };
    },
  },
  {
    name: 'audit list',
    usage: '[--limit N] [--before ID] [--operator E]',
    summary: 'what operators did in the dashboard, newest first',
    options: { limit: { type: 'string' }, before: { type: 'string' }, operator: { type: 'string' } },
    run: async (app, { values }) => {
      const limit = optional(values, 'limit');
      const before = optional(values, 'before');
      if (limit !== undefined && !/^\d+$/.test(limit)) throw new UsageError('--limit must be a number');
      if (before !== undefined && !/^\d+$/.test(before)) throw new UsageError('--before must be an entry id');
      return app.audit.list({
        limit: limit === undefined ? 50 : Number(limit),
        before: before === undefined ? undefined : Number(before),
        operator: optional(values, 'operator'),
      });
    },
  },
];
