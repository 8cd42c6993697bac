// Operators' passkeys (WebAuthn, through @simplewebauthn/server): an operator signed in adds one
// from the Account page, and then signs in with it alone: the authenticator proves possession of
// the key and, with user verification required, the PIN or fingerprint that unlocks it, so a
// passkey is two factors in one and meets the box's rule requiring a second factor. Challenges are
// kept in the database for five minutes and taken once, so any node finishes a ceremony another
// began. The site (origin and RP ID) is `publicUrl`'s when set, else the request's own origin.
import type { AuthenticationResponseJSON, AuthenticatorTransportFuture, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { Deps } from '../deps.js';
import { AppError, invalidBody, notFound } from '../lib/errors.js';
import type { Operator } from './operators.js';

// Loaded on the first ceremony: an idle daemon does not carry the ASN.1 and CBOR readers.
const webauthn = () => import('@simplewebauthn/server');

/** Where the ceremony happens: the page's origin and the RP ID (its host name) passkeys are bound to. */
export interface Site {
  origin: string;
  rpId: string;
}

export interface Passkey {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}

export interface Passkeys {
  list(operatorId: string): Promise<Passkey[]>;
  /** Options for the browser's navigator.credentials.create(), with a challenge kept for 5 minutes. */
  registrationOptions(operator: Operator, site: Site): Promise<unknown>;
  /** Checks the browser's answer against the challenge and keeps the new passkey. */
  register(operator: Operator, response: unknown, name: string, site: Site): Promise<Passkey>;
  /** Options for navigator.credentials.get(): any passkey of this site (discoverable credentials). */
  signInOptions(site: Site): Promise<unknown>;
  /** The operator whose passkey signed the challenge; throws unauthorized otherwise. */
  signIn(response: unknown, site: Site): Promise<string>;
  remove(operatorId: string, id: string): Promise<void>;
}

const CHALLENGE_TTL_MS = 5 * 60_000;
const TIMEOUT_MS = 60_000;

const refused = (why: string) => new AppError('unauthorized', `the passkey was not accepted: ${why}`);

function responseOf<T>(value: unknown): T {
  const v = value as { id?: unknown; rawId?: unknown; response?: unknown; type?: unknown } | null;
  if (
    !v ||
    typeof v !== 'object' ||
    typeof v.id !== 'string' ||
    typeof v.rawId !== 'string' ||
    typeof v.response !== 'object' ||
    v.type !== 'public-key'
  ) {
    throw invalidBody([{ path: 'response', message: 'must be the JSON of a public-key credential, as @simplewebauthn/browser makes it' }]);
  }
  return value as T;
}

export function createPasskeys({ db, clock }: Pick<Deps, 'db' | 'clock'>): Passkeys {
  async function keepChallenge(challenge: string, purpose: 'register' | 'sign-in', operatorId: string | null): Promise<void> {
    const now = clock.now();
    await db.deleteFrom('webauthn_challenges').where('expires_at', '<=', now.toISOString()).execute();
    await db
      .insertInto('webauthn_challenges')
      .values({ challenge, purpose, operator_id: operatorId, expires_at: new Date(now.getTime() + CHALLENGE_TTL_MS).toISOString() })
      .execute();
  }

  /** Takes a challenge once: the compare-and-swap is its deletion. */
  async function takeChallenge(challenge: string, purpose: 'register' | 'sign-in', operatorId: string | null): Promise<boolean> {
    let q = db
      .deleteFrom('webauthn_challenges')
      .where('challenge', '=', challenge)
      .where('purpose', '=', purpose)
      .where('expires_at', '>', clock.now().toISOString());
    q = operatorId === null ? q.where('operator_id', 'is', null) : q.where('operator_id', '=', operatorId);
    return Number((await q.executeTakeFirst()).numDeletedRows) === 1;
  }

  /** The challenge inside a browser's answer (clientDataJSON), or '' when it cannot be read. */
  function challengeOf(response: { response: { clientDataJSON?: unknown } }): string {
    try {
      const data = JSON.parse(Buffer.from(String(response.response.clientDataJSON), 'base64url').toString('utf8')) as {
        challenge?: unknown;
      };
      return typeof data.challenge === 'string' ? data.challenge : '';
    } catch {
      return '';
    }
  }

  const toPasskey = (r: { id: string; name: string; created_at: string; last_used_at: string | null }): Passkey => ({
    id: r.id,
    name: r.name,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
  });

  return {
    async list(operatorId) {
      const rows = await db
        .selectFrom('operator_passkeys')
        .selectAll()
        .where('operator_id', '=', operatorId)
        .orderBy('created_at')
        .execute();
      return rows.map(toPasskey);
    },

    async registrationOptions(operator, site) {
      const existing = await db
        .selectFrom('operator_passkeys')
        .select(['id', 'transports'])
        .where('operator_id', '=', operator.id)
        .execute();
      const options = await (
        await webauthn()
      ).generateRegistrationOptions({
        rpName: 'Postern',
        rpID: site.rpId,
        userName: operator.email,
        userID: Buffer.from(operator.id),
        attestationType: 'none',
        timeout: TIMEOUT_MS,
        // The same authenticator twice would be one factor listed twice.
        excludeCredentials: existing.map((c) => ({ id: c.id, transports: JSON.parse(c.transports) as AuthenticatorTransportFuture[] })),
        authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
      });
      await keepChallenge(options.challenge, 'register', operator.id);
      return options;
    },

    async register(operator, value, name, site) {
      const response = responseOf<RegistrationResponseJSON>(value);
      const label = String(name ?? '').trim();
      if (!label || label.length > 100) throw invalidBody([{ path: 'name', message: 'name the passkey (1 to 100 characters)' }]);
      const challenge = challengeOf(response);
      if (!challenge || !(await takeChallenge(challenge, 'register', operator.id))) {
        throw new AppError('conflict', 'this passkey ceremony has expired or was already used: start again');
      }
      let verified;
      try {
        verified = await (
          await webauthn()
        ).verifyRegistrationResponse({
          response,
          expectedChallenge: challenge,
          expectedOrigin: site.origin,
          expectedRPID: site.rpId,
          requireUserVerification: true,
        });
      } catch (err) {
        throw invalidBody([{ path: 'response', message: (err as Error).message }]);
      }
      if (!verified.verified) throw invalidBody([{ path: 'response', message: 'the authenticator’s answer did not verify' }]);
      const { credential } = verified.registrationInfo;
      const row = {
        id: credential.id,
        operator_id: operator.id,
        public_key: Buffer.from(credential.publicKey).toString('base64url'),
        counter: credential.counter,
        transports: JSON.stringify(credential.transports ?? []),
        name: label,
        created_at: clock.now().toISOString(),
        last_used_at: null,
      };
      const taken = await db.selectFrom('operator_passkeys').select('id').where('id', '=', row.id).executeTakeFirst();
      if (taken) throw new AppError('already_exists', 'this passkey is already registered');
      await db.insertInto('operator_passkeys').values(row).execute();
      return toPasskey(row);
    },

    async signInOptions(site) {
      const options = await (
        await webauthn()
      ).generateAuthenticationOptions({ rpID: site.rpId, userVerification: 'required', timeout: TIMEOUT_MS });
      await keepChallenge(options.challenge, 'sign-in', null);
      return options;
    },

    async signIn(value, site) {
      const response = responseOf<AuthenticationResponseJSON>(value);
      const challenge = challengeOf(response);
      if (!challenge || !(await takeChallenge(challenge, 'sign-in', null)))
        throw refused('the sign-in has expired or was already used; try again');
      const row = await db.selectFrom('operator_passkeys').selectAll().where('id', '=', response.id).executeTakeFirst();
      if (!row) throw refused('it is not registered here (removed, or made for another box)');
      let verified;
      try {
        verified = await (
          await webauthn()
        ).verifyAuthenticationResponse({
          response,
          expectedChallenge: challenge,
          expectedOrigin: site.origin,
          expectedRPID: site.rpId,
          requireUserVerification: true,
          credential: {
            id: row.id,
            publicKey: Buffer.from(row.public_key, 'base64url'),
            counter: Number(row.counter),
            transports: JSON.parse(row.transports) as AuthenticatorTransportFuture[],
          },
        });
      } catch (err) {
        throw refused((err as Error).message);
      }
      if (!verified.verified) throw refused('the signature did not verify');
      await db
        .updateTable('operator_passkeys')
        .set({ counter: verified.authenticationInfo.newCounter, last_used_at: clock.now().toISOString() })
        .where('id', '=', row.id)
        .execute();
      return row.operator_id;
    },

    async remove(operatorId, id) {
      const gone = await db.deleteFrom('operator_passkeys').where('operator_id', '=', operatorId).where('id', '=', id).executeTakeFirst();
      if (Number(gone.numDeletedRows) === 0) throw notFound('passkey');
    },
  };
}
