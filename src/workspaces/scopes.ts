// Scopes limit what a key may do. A key created without scopes is unscoped: it may do everything.

const SCOPES = ['read', 'send', 'cancel', 'inbound', 'webhooks'] as const;
export type Scope = (typeof SCOPES)[number];

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

/** Whether a key with these scopes may act under `needed`. */
export function allows(scopes: Scope[] | null, needed: Scope): boolean {
  return scopes === null || scopes.includes(needed);
}
