// The public face of workspaces/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
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
