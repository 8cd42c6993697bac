// The tenant boundary: workspaces, API keys and scopes, operators and their sessions, second
// factors, passkeys, SSO, the audit log. This is the area's public face: the rest of the daemon
// imports only what it names (the `areas-through-their-face` rule).
export type { AuditLog } from './audit.js';
export type { KeyStore, Principal } from './keys.js';
export type { OperatorStore } from './operators.js';
export { createOverview } from './overview.js';
export type { Passkeys, Site } from './passkeys.js';
export { planLimits } from './plans.js';
export { allows } from './scopes.js';
export type { SecondFactors } from './second-factor.js';
export type { Client, Session, SessionStore } from './sessions.js';
export type { SingleSignOn } from './sso.js';
export type { Workspace, WorkspaceStore } from './workspaces.js';
