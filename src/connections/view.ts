import type { Connection } from './store.js';

/** A connection as the API and the CLI show it: settings without secrets, secret names only. */
export function connectionView(c: Connection) {
  return {
    id: c.id,
    env: c.env,
    channel: c.channel,
    provider: c.provider,
    name: c.name,
    settings: c.settings,
    credentials: c.secrets.map((name) => ({ name, set: true })),
    createdAt: c.createdAt,
    ...(c.removedAt ? { removedAt: c.removedAt } : {}),
  };
}
