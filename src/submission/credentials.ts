// Who may submit: AUTH PLAIN or LOGIN with, as the user name, `apikey` (as SendGrid has it) or the
// workspace's slug, and as the password an API key with the `send` scope; or with an SMTP
// credential's user name (`smtp_…`) and its secret (smtp-credentials.ts), which stands for a
// send-only key. The key or credential decides the workspace and the environment (a test one
// submits test-mode messages), as a key does over HTTP.
// Every attempt passes the throttle first (throttle.ts); every failure, and every attempt the
// throttle turns away, is written to the audit log under the user name tried.
import { allows, type AuditLog, type KeyStore, type Principal } from '../workspaces/index.js';
import { refused } from './refusals.js';
import { isCredentialUsername, looksLikeCredentialSecret, type SmtpCredentialStore } from './smtp-credentials.js';
import type { AuthThrottle } from './throttle.js';

/** The user name every key may use; the workspace's slug works too. */
export const GENERIC_USER = 'apikey';

export interface Credentials {
  /** The principal of a user name and password; throws SubmissionRefused (auth-failed, auth-throttled). */
  authenticate(user: string, password: string, client: { ip: string }): Promise<Principal>;
}

export function createCredentials(deps: {
  keys: KeyStore;
  smtpCredentials: Pick<SmtpCredentialStore, 'authenticate'>;
  throttle: AuthThrottle;
  audit: AuditLog;
}): Credentials {
  const { keys, smtpCredentials, throttle, audit } = deps;

  const record = (user: string, ip: string, principal: Principal | null, outcome: string) =>
    audit.record({
      operator: { id: null, email: user.slice(0, 254) },
      action: 'smtp.auth',
      target: 'submission',
      workspaceId: principal?.workspace.id ?? null,
      env: principal?.env ?? null,
      ip,
      outcome,
    });

  /** The principal of the password and why it may not submit as `user` (null: it may). */
  async function check(user: string, password: string): Promise<{ principal: Principal | null; why: string | null }> {
    if (isCredentialUsername(user)) {
      const principal = await smtpCredentials.authenticate(user, password);
      return { principal, why: principal ? null : 'invalid or revoked SMTP credential' };
    }
    if (looksLikeCredentialSecret(password)) {
      return { principal: null, why: "an SMTP credential's secret goes with its own user name (smtp_…)" };
    }
    const principal = await keys.authenticate(password);
    return { principal, why: problem(user, principal) };
  }

  /** Why a key's principal may not submit as `user`, or null. */
  function problem(user: string, principal: Principal | null): string | null {
    if (!principal) return 'invalid or revoked API key';
    if (!allows(principal.scopes, 'send')) return 'this key lacks the send scope';
    const name = user.trim().toLowerCase();
    if (name !== GENERIC_USER && name !== principal.workspace.slug.toLowerCase()) {
      return `the user name must be ${GENERIC_USER} or the key's workspace slug`;
    }
    return null;
  }

  return {
    async authenticate(user, password, client) {
      const wait = await throttle.wait(user, client.ip);
      if (wait > 0) {
        await record(user, client.ip, null, 'throttled');
        throw refused({ reason: 'auth-throttled', seconds: wait });
      }
      const { principal, why } = await check(user, password.trim());
      if (why === null) return principal!;
      await throttle.failed(user, client.ip);
      await record(user, client.ip, principal, `failed: ${why}`);
      throw refused({ reason: 'auth-failed', detail: why });
    },
  };
}
