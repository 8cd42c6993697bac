// What the dashboard's own routes share: their dependencies, and the session a route acts under.
import type { WarmUp } from '../../channels/email/index.js';
import type { NodeRegistry } from '../../cluster/index.js';
import type { Request, Response } from 'express';
import type { DashboardAnswers } from '../../contract/dashboard.js';
import type { ConnectionStore } from '../../channels/index.js';
import type { EmailSource } from '../../channels/email/index.js';
import type { CertificateProblem } from '../../certificates/index.js';
import type { Config } from '../../config.js';
import type { Db } from '../../db/index.js';
import type { ReceivedReader } from '../../inbound/index.js';
import type { Clock } from '../../lib/clock.js';
import { AppError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { Outbound } from '../../outbound/index.js';
import type { TemplateStore } from '../../templates/index.js';
import type {
  AuditLog,
  KeyStore,
  OperatorStore,
  Passkeys,
  SecondFactors,
  Session,
  SessionStore,
  SingleSignOn,
  Site,
  Workspace,
  WorkspaceStore,
} from '../../workspaces/index.js';
import type { SmtpCredentialStore } from '../../submission/index.js';
import type { SuppressionStore } from '../../suppressions/index.js';
import type { EndpointStore } from '../../webhooks/index.js';
import type { Env } from '../../contract/vocabulary.js';

export interface DashboardDeps {
  config: Config;
  clock: Clock;
  log: Logger;
  db: Db;
  operators: OperatorStore;
  sessions: SessionStore;
  factors: SecondFactors;
  passkeys: Passkeys;
  sso: SingleSignOn;
  audit: AuditLog;
  workspaces: WorkspaceStore;
  keys: KeyStore;
  smtpCredentials: SmtpCredentialStore;
  connections: ConnectionStore;
  outbound: Outbound;
  received: ReceivedReader;
  templates: TemplateStore;
  suppressions: SuppressionStore;
  webhooks: EndpointStore;
  /** The nodes sharing the database. */
  nodes: Pick<NodeRegistry, 'list'>;
  publicUrl(): string;
  /** The submission ports listened on (`tlsPort` null when off); null when submission is off. */
  submissionPorts(): { port: number; tlsPort: number | null } | null;
  /** An email message as delivery would compose it (the source view). */
  emailSource: EmailSource;
  /** Certificates failing to renew or expired (ACME on), for the Overview's warnings. */
  certificateProblems?: () => Promise<CertificateProblem[]>;
  /** Warm-up schedules of source addresses; null when delivery.warmUp.enabled is off. */
  warmUp: Pick<WarmUp, 'list'> | null;
}

export function sessionOf(res: Response): Session {
  const s = res.locals.session as Session | undefined;
  if (!s) throw new AppError('unauthorized', 'log in to the dashboard');
  return s;
}

/** The workspace and environment the session acts on; 403 until one is chosen. */
export async function actingOn(
  deps: Pick<DashboardDeps, 'workspaces'>,
  res: Response,
): Promise<{ session: Session; workspace: Workspace; env: Env }> {
  const session = sessionOf(res);
  if (!session.workspaceId) throw new AppError('forbidden', 'choose a workspace first');
  return { session, workspace: await deps.workspaces.byId(session.workspaceId), env: session.env };
}

export function requireOwner(res: Response): Session {
  const session = sessionOf(res);
  if (session.operator.role !== 'owner') throw new AppError('forbidden', 'only an owner may do this');
  return session;
}

/** Names the audit entry of a state-changing dashboard route (else method and path). */
export function auditAs(res: Response, action: string, target = ''): void {
  res.locals.audit = { action, target };
}

/**
 * Where a passkey ceremony happens: `publicUrl`'s origin when it is set (passkeys are bound to it),
 * else the origin the browser called (the same-origin check has held it to the Host header).
 */
export function siteOf(deps: Pick<DashboardDeps, 'config'>, req: Request): Site {
  const url = new URL(deps.config.publicUrl || `${req.protocol}://${req.get('host') ?? 'localhost'}`);
  return { origin: url.origin, rpId: url.hostname.replace(/^\[|\]$/g, '') };
}

export function isSecure(deps: Pick<DashboardDeps, 'publicUrl'>, req: Request): boolean {
  return req.secure || deps.publicUrl().startsWith('https:');
}

/**
 * Sends the answer of a dashboard route as the contract states it (contract/dashboard.ts), so the
 * route and the page that reads it are checked against one type.
 */
export function answer<K extends keyof DashboardAnswers>(res: Response, _key: K, body: DashboardAnswers[K], status = 200): void {
  res.status(status).json(body);
}
