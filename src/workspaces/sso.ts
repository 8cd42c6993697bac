// Single sign-on for operators (OpenID Connect, through openid-client): the authorization code flow
// with PKCE, a state and a nonce kept in the database for ten minutes and taken once (so any node
// finishes a sign-in another began, and a replayed callback is refused). The ID token's signature
// (against the provider's published keys), issuer, audience, expiry and nonce are checked by
// openid-client. The operator is the verified
// email of the provider's account: made on its first sign-in, its role taken from a claim (groups by
// default) at every sign-in, so a change at the provider reaches Postern at the next one.
import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import type { OperatorRole } from '../db/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../lib/errors.js';
import { bytesToBase62 } from '../lib/ids.js';
import type { Operator, OperatorStore } from './operators.js';

// Loaded on the first sign-in: an idle daemon, and every box without SSO, does without it.
const oidc = () => import('openid-client');
type OidcConfiguration = Awaited<ReturnType<Awaited<ReturnType<typeof oidc>>['discovery']>>;

const LOGIN_TTL_MS = 10 * 60_000;

export interface SingleSignOn {
  /** The button's label on the login page, or null when SSO is off. */
  name(): string | null;
  /** Where to send the browser to sign in at the provider; `callback` is this box's callback URL. */
  start(callback: string): Promise<string>;
  /** Finishes a sign-in from the URL the provider sent the browser back to: the operator it signs in. */
  finish(currentUrl: string, callback: string): Promise<Operator>;
  /** The provider's logout URL that comes back to `after`, or null when it publishes none. */
  logoutUrl(after: string): Promise<string | null>;
}

type SsoConfig = Config['dashboard']['sso'];

/** The role the provider's claim gives, or null when the box's lists admit the account to neither. */
function roleFromClaim(sso: Pick<SsoConfig, 'ownerGroups' | 'memberGroups'>, claim: unknown): OperatorRole | null {
  const values = new Set((Array.isArray(claim) ? claim : typeof claim === 'string' ? claim.split(/[\s,]+/) : []).map(String));
  if (sso.ownerGroups.some((g) => values.has(g))) return 'owner';
  if (sso.memberGroups.length === 0 || sso.memberGroups.some((g) => values.has(g))) return 'member';
  return null;
}

/** Plain http is for a provider on this machine (tests, a provider beside the box); https otherwise. */
const loopback = (url: URL) => url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);

export function createSingleSignOn({
  db,
  clock,
  config,
  log,
  operators,
}: Pick<Deps, 'db' | 'clock' | 'config' | 'log'> & { operators: OperatorStore }): SingleSignOn {
  const sso = config.dashboard.sso;
  let discovered: Promise<OidcConfiguration> | null = null;

  /** The provider's metadata and keys, discovered once; a failed discovery is tried again next time. */
  function provider(): Promise<OidcConfiguration> {
    if (!sso.issuer) throw new AppError('not_found', 'single sign-on is not configured (dashboard.sso.issuer)');
    const attempt = (discovered ??= (async () => {
      const client = await oidc();
      const issuer = new URL(sso.issuer);
      return client.discovery(issuer, sso.clientId, undefined, client.ClientSecretBasic(sso.clientSecret), {
        // The ID token's signature is checked against the provider's keys (jwks_uri) even though it
        // comes straight from the token endpoint: a proxy or a mistaken TLS setup cannot forge one.
        execute: [client.enableNonRepudiationChecks, ...(loopback(issuer) ? [client.allowInsecureRequests] : [])],
        timeout: 10,
      });
    })());
    return attempt.catch((err: Error) => {
      // Forgotten, so the next sign-in discovers again once the provider is back.
      if (discovered === attempt) discovered = null;
      log.warn({ err: err.message, issuer: sso.issuer }, 'single sign-on provider unreachable');
      throw new AppError(
        'unavailable',
        `the sign-in provider at ${sso.issuer} does not answer (${err.message}); try again, or sign in with a password`,
      );
    });
  }

  return {
    name: () => (sso.issuer ? sso.name : null),

    async start(callback) {
      const [configuration, client] = await Promise.all([provider(), oidc()]);
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const nonce = client.randomNonce();
      const now = clock.now();
      await db.deleteFrom('sso_logins').where('expires_at', '<=', now.toISOString()).execute();
      await db
        .insertInto('sso_logins')
        .values({ state, nonce, verifier, expires_at: new Date(now.getTime() + LOGIN_TTL_MS).toISOString() })
        .execute();
      return client
        .buildAuthorizationUrl(configuration, {
          redirect_uri: callback,
          scope: sso.scopes,
          response_type: 'code',
          code_challenge: await client.calculatePKCECodeChallenge(verifier),
          code_challenge_method: 'S256',
          state,
          nonce,
        })
        .toString();
    },

    async finish(currentUrl, callback) {
      const url = new URL(currentUrl);
      const state = url.searchParams.get('state') ?? '';
      const refused = (why: string) => new AppError('unauthorized', `single sign-on failed: ${why}`);
      if (url.searchParams.get('error'))
        throw refused(`the provider answered ${url.searchParams.get('error')}: ${url.searchParams.get('error_description') ?? ''}`.trim());
      // Taken once: the row's deletion is the compare-and-swap.
      const row = await db.selectFrom('sso_logins').selectAll().where('state', '=', state).executeTakeFirst();
      const taken = row && Number((await db.deleteFrom('sso_logins').where('state', '=', state).executeTakeFirst()).numDeletedRows) === 1;
      if (!row || !taken || Date.parse(row.expires_at) <= clock.now().getTime())
        throw refused('this sign-in has expired or was already used; start again');
      const [configuration, client] = await Promise.all([provider(), oidc()]);
      let claims: Record<string, unknown>;
      try {
        // The callback URL as the provider was told, with the query the browser brought back.
        const back = new URL(callback);
        back.search = url.search;
        const tokens = await client.authorizationCodeGrant(configuration, back, {
          pkceCodeVerifier: row.verifier,
          expectedState: state,
          expectedNonce: row.nonce,
          idTokenExpected: true,
        });
        const idClaims = tokens.claims()!;
        const info = await client.fetchUserInfo(configuration, tokens.access_token, idClaims.sub);
        claims = { ...info, ...idClaims };
      } catch (err) {
        if (err instanceof AppError) throw err;
        // openid-client names the kind of failure; the reason is in its cause.
        const cause = (err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : '';
        throw refused([(err as Error).message, cause].filter(Boolean).join(': '));
      }
      const email = typeof claims.email === 'string' ? claims.email.trim().toLowerCase() : '';
      if (!email) throw refused(`the provider gave no email for the account (ask for the email scope: dashboard.sso.scopes)`);
      if (claims.email_verified !== true) throw refused(`the provider has not verified ${email}`);
      const role = roleFromClaim(sso, claims[sso.roleClaim]);
      if (!role)
        throw new AppError(
          'forbidden',
          `${email} is in none of the provider's groups this box admits (dashboard.sso.memberGroups, ownerGroups)`,
        );
      let operator: Operator | null = null;
      try {
        operator = await operators.byEmail(email);
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'not_found')) throw err;
      }
      // A password nobody knows: the account signs in through the provider (an owner can set one with
      // postern operator reset-password).
      operator ??= await operators.create({ email, password: bytesToBase62(randomBytes(32)), role });
      if (operator.role !== role) {
        try {
          operator = await operators.setAccess(operator.id, { role });
        } catch (err) {
          // The last owner stays one: the provider cannot lock every owner out of the box.
          if (!(err instanceof AppError && err.code === 'conflict')) throw err;
          log.warn({ email, role }, 'single sign-on left the last owner an owner');
        }
      }
      return operator;
    },

    async logoutUrl(after) {
      if (!sso.issuer) return null;
      const [configuration, client] = await Promise.all([provider(), oidc()]);
      if (!configuration.serverMetadata().end_session_endpoint) return null;
      return client.buildEndSessionUrl(configuration, { client_id: sso.clientId, post_logout_redirect_uri: after }).toString();
    },
  };
}
