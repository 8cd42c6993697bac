// `postern connection add|list|remove`. Provider settings are loose `--name value` flags derived
// from the providers' settings (camelCase settings as kebab-case flags); a key or certificate may be
// read from a file with `--<flag>-file PATH`, and FCM takes `--service-account-file` (the JSON
// Google issues). Output never contains a secret value.
import { readFileSync } from 'node:fs';
import type { ArgValues, Command, OptionSpec } from './command.js';
import { optional, required, UsageError } from './command.js';
import { connectionView, kebab, PROVIDERS } from '../channels/index.js';
import { emailConnectionView } from '../channels/email/index.js';

const FIXED = ['workspace', 'env', 'channel', 'provider', 'name'];

const settingOptions: OptionSpec = {};
for (const p of PROVIDERS) {
  for (const s of p.settings) {
    settingOptions[kebab(s.name)] = { type: 'string' };
    if (s.file) settingOptions[`${kebab(s.name)}-file`] = { type: 'string' };
  }
}
settingOptions['service-account-file'] = { type: 'string' };

function readText(file: string, flag: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`--${flag}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** The provider settings given on the command line, files read, as camelCase keys. */
export function settingsFromFlags(values: ArgValues): Record<string, string> {
  const out: Record<string, string> = {};
  const camel = (flag: string) => flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  for (const [flag, v] of Object.entries(values)) {
    if (FIXED.includes(flag) || v === undefined) continue;
    if (typeof v !== 'string') throw new UsageError(`--${flag} needs a value, or is not a setting of any provider`);
    if (flag === 'service-account-file') {
      let sa: Record<string, unknown>;
      try {
        sa = JSON.parse(readText(v, flag)) as Record<string, unknown>;
      } catch (err) {
        if (err instanceof UsageError) throw err;
        throw new UsageError(`--${flag}: ${v} is not JSON`);
      }
      // The fields of the JSON Google issues for a service account, as provider settings.
      const fields = {
        projectId: 'project_id',
        clientEmail: 'client_email',
        privateKey: 'private_key',
        privateKeyId: 'private_key_id',
        tokenUrl: 'token_uri',
      };
      for (const [setting, field] of Object.entries(fields)) {
        const value = sa?.[field];
        if (typeof value === 'string' && value) out[setting] ??= value;
      }
    } else if (flag.endsWith('-file')) {
      out[camel(flag.slice(0, -'-file'.length))] = readText(v, flag);
    } else {
      out[camel(flag)] = v;
    }
  }
  return out;
}

export const connectionCommands: Command[] = [
  {
    name: 'connection add',
    usage: '--workspace S --env live|test --channel sms|push|web-push --provider P [--name N] [--<setting> VALUE …]',
    summary: 'connect a provider (settings per provider: see docs/providers.md); secrets are stored encrypted',
    options: {
      workspace: { type: 'string' },
      env: { type: 'string' },
      channel: { type: 'string' },
      provider: { type: 'string' },
      name: { type: 'string' },
      ...settingOptions,
    },
    loose: true,
    run: async (app, { values }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      const conn = await app.connections.add({
        workspaceId: ws.id,
        env: required(values, 'env'),
        channel: required(values, 'channel'),
        provider: required(values, 'provider'),
        name: optional(values, 'name'),
        values: settingsFromFlags(values),
      });
      return connectionView(conn);
    },
  },
  {
    name: 'connection list',
    usage: '--workspace S [--env live|test]',
    summary: "list a workspace's provider connections (never their secrets)",
    options: { workspace: { type: 'string' }, env: { type: 'string' } },
    run: async (app, { values }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      const env = optional(values, 'env');
      if (env !== undefined && env !== 'live' && env !== 'test') throw new UsageError('--env must be live or test');
      const envs = env ? [env] : (['live', 'test'] as const);
      const email = envs.map((e) => emailConnectionView(app.config, e as 'live' | 'test'));
      return [...email, ...(await app.connections.list(ws.id, env ? { env } : {})).map(connectionView)];
    },
  },
  {
    name: 'connection remove',
    usage: 'ID',
    summary: 'remove a connection; its channel stops sending live until another is added',
    run: async (app, { positionals }) => {
      if (!positionals[0]) throw new UsageError('connection id is required');
      const conn = await app.connections.remove(positionals[0]);
      return { id: conn.id, removed: true };
    },
  },
];
