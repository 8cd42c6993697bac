// What the dashboard's own JSON routes (src/http/dashboard/, under /dashboard/api) answer, by
// operation key, beside the /v1 answers of responses.ts: ui/src/api.ts types every call from
// these two maps. Routes that answer nothing the dashboard reads (`{ ok: true }`, an empty body)
// are left out and read as `unknown`; so are the WebAuthn options, whose shape is the W3C's
// (PublicKeyCredential*OptionsJSON). Part of the contract (src/contract/); types only, so the
// dashboard's bundle takes nothing from here.
import type { z } from 'zod';
import type { Channel } from './channels.js';
import type { nodeListSchema } from './cluster-schemas.js';
import type { Overview } from './overview.js';
import type { smtpCredentialSchema } from './smtp-credential-schemas.js';
import type { Env, Scope } from './vocabulary.js';
import type { WarmUpView } from './warm-up.js';

export type OperatorRole = 'owner' | 'member';

/** The operator's session (GET /dashboard/api/me, and the login, setup and selection answers). */
export interface Me {
  operator: { id: string; email: string; role: OperatorRole };
  csrfToken: string;
  workspaces: { id: string; slug: string; name: string; plan: string }[];
  selection: { workspaceId: string; env: Env } | null;
  expiresAt: string;
  /** How this session was signed in to. */
  signedInWith: 'password' | 'password+totp' | 'password+recovery-code' | 'passkey' | 'sso';
  /** The box requires a second factor and the operator has none: only the account page opens. */
  mustSetUpSecondFactor: boolean;
}

export interface SecondFactorStatus {
  totp: boolean;
  recoveryCodesLeft: number;
  passkeys: number;
  required: boolean;
}

export interface Passkey {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}

/** A TOTP enrollment: the secret, its otpauth URI and the QR code of it. */
export interface TotpEnrollment {
  secret: string;
  uri: string;
  qrSvg: string;
}

export interface WorkspaceView {
  id: string;
  slug: string;
  name: string;
  plan: string;
  createdAt?: string;
}

export interface OperatorView {
  id: string;
  email: string;
  role: OperatorRole;
  workspaces: string[];
  createdAt: string;
  /** An authenticator app is set up. */
  secondFactor: boolean;
}

/** One line of the audit log (workspaces/audit.ts writes it; owners read it). */
export interface AuditEntry {
  id: number;
  at: string;
  operator: { id: string | null; email: string };
  action: string;
  target: string;
  workspaceId: string | null;
  env: Env | null;
  ip: string;
  outcome: string;
}

/** One setting of a provider, as the add-a-connection form asks for it. */
export interface ProviderSetting {
  name: string;
  secret: boolean;
  required: boolean;
  default: string | null;
  multiline: boolean;
  kind: string | null;
  describe: string;
}

export interface ProviderSpecView {
  channel: string;
  name: string;
  settings: ProviderSetting[];
}

/** An API key as the dashboard lists it (never its secret). */
export interface ApiKey {
  id: string;
  workspaceId: string;
  name: string;
  env: Env;
  prefix: string;
  /** null: unscoped, full access. */
  scopes: Scope[] | null;
  createdAt: string;
  revokedAt: string | null;
  /** When a request last authenticated with it, to the minute; null if never. */
  lastUsedAt: string | null;
}

export interface SmtpSettings {
  enabled: boolean;
  host: string;
  starttlsPort: number | null;
  tlsPort: number | null;
  usernames: string[];
}

/** A webhook delivery's request as it was (or will be) sent. */
export interface DeliveryRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * A message rendered again from what was stored: the channel's output (channel.ts ChannelOutput:
 * each channel fills its own of these fields) and, for email, the header lines.
 */
export interface RenderedMessage {
  channel: Channel;
  output: {
    subject?: string;
    preheader?: string;
    html?: string;
    text?: string;
    title?: string;
    body?: string;
    data?: Record<string, unknown>;
    badge?: number | string | null;
    sound?: string | null;
    icon?: string | null;
    clickUrl?: string | null;
  };
  headers: [string, string][];
}

type SmtpCredential = z.output<typeof smtpCredentialSchema>;

/** The dashboard routes' answers the dashboard reads, by operation key (`METHOD /path/:param`). */
export interface DashboardAnswers {
  'GET /dashboard/api/state': { needsSetup: boolean; sso: string | null };
  'POST /dashboard/api/setup': Me;
  'POST /dashboard/api/login': Me;
  'POST /dashboard/api/login/passkey': Me;
  'POST /dashboard/api/logout': { loggedOut: true; redirect: string | null };
  'GET /dashboard/api/me': Me;
  'PUT /dashboard/api/selection': Me;
  'GET /dashboard/api/account/second-factor': SecondFactorStatus;
  'POST /dashboard/api/account/second-factor/totp': TotpEnrollment;
  'POST /dashboard/api/account/second-factor/totp/confirm': { recoveryCodes: string[] };
  'POST /dashboard/api/account/second-factor/recovery-codes': { recoveryCodes: string[] };
  'GET /dashboard/api/account/passkeys': { data: Passkey[] };
  'GET /dashboard/api/workspaces': { data: WorkspaceView[] };
  'GET /dashboard/api/plans': { data: string[] };
  'GET /dashboard/api/operators': { data: OperatorView[] };
  'GET /dashboard/api/security': { requireSecondFactor: boolean };
  'GET /dashboard/api/audit': { data: AuditEntry[]; nextBefore: number | null };
  'GET /dashboard/api/nodes': z.output<typeof nodeListSchema>;
  'GET /dashboard/api/connections/providers': { data: ProviderSpecView[] };
  'GET /dashboard/api/keys': { data: ApiKey[] };
  'POST /dashboard/api/keys': { key: ApiKey; secret: string };
  'GET /dashboard/api/messages/:id/rendered': RenderedMessage;
  'GET /dashboard/api/overview': Overview;
  'GET /dashboard/api/smtp/settings': SmtpSettings;
  'GET /dashboard/api/smtp/credentials': { data: SmtpCredential[] };
  'POST /dashboard/api/smtp/credentials': { credential: SmtpCredential; secret: string };
  'POST /dashboard/api/templates/:slug/test-send': { id: string; status: string };
  'GET /dashboard/api/warm-up': WarmUpView;
  'GET /dashboard/api/webhooks/:id/deliveries/:deliveryId/request': DeliveryRequest;
}
