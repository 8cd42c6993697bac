// Scopes limit what a key may do. A key created without scopes is unscoped: it may do everything a
// workspace may. The `cluster` scope is the box's, not a workspace's (the nodes, their hosts and
// pids): an unscoped key does not have it, a key gets it only by naming it, and only a box owner
// may grant it (the CLI, or an owner in the dashboard; keys.ts refuses anyone else).

import { BOX_SCOPES, SCOPES, type Scope } from '../contract/vocabulary.js';

export function parseScopes(raw: string | undefined): { ok: true; scopes: Scope[] | null } | { ok: false; message: string } {
  if (raw === undefined || raw.trim() === '') return { ok: true, scopes: null };
  const list = [
    ...new Set(
      raw
        .split(',')
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    ),
  ];
  const unknown = list.filter((s) => !SCOPES.includes(s as Scope));
  if (unknown.length) return { ok: false, message: `unknown scope ${unknown.join(', ')}; scopes are ${SCOPES.join(', ')}` };
  return { ok: true, scopes: list as Scope[] };
}

/** Whether a key with these scopes may act under `needed` (an unscoped key: every workspace scope). */
export function allows(scopes: Scope[] | null, needed: Scope): boolean {
  return scopes === null ? !BOX_SCOPES.includes(needed) : scopes.includes(needed);
}
