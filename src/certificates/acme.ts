// The ACME client (RFC 8555), by acme-client: an account per directory, its key made once and kept
// in the database; one certificate per name, an RSA 2048 key (every SMTP client that speaks TLS at
// all can use it) and a CSR for that name alone, so a name whose challenge fails never holds up
// another's. The challenge answers go where every node can give them: HTTP-01 key authorizations
// into the database (any node answers /.well-known/acme-challenge/), TLS-ALPN-01 ones too (any
// node makes the challenge certificate from it when the CA asks over `acme-tls/1`). acme-client is
// loaded on first use: a daemon without ACME never pays for it.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { X509Certificate } from 'node:crypto';
import type * as AcmeClient from 'acme-client';
import type { Config } from '../config.js';
import type { CertificateStore, IssuedCertificate } from './store.js';

/** The token under which a TLS-ALPN-01 key authorization for `name` is kept. */
export const alpnToken = (name: string) => `tls-alpn-01:${name}`;

// acme-client's types know HTTP-01 and DNS-01 only; it handles TLS-ALPN-01 all the same.
const tokenOf = (name: string, challenge: { type: string; token: string }) =>
  challenge.type === 'tls-alpn-01' ? alpnToken(name) : challenge.token;

/** How long a challenge answer is kept for the CA (it validates within seconds). */
const CHALLENGE_TTL_MS = 10 * 60_000;

export interface AcmeIssuer {
  issue(name: string): Promise<IssuedCertificate>;
  revoke(cert: string): Promise<void>;
}

type AcmeModule = typeof AcmeClient;

export function createAcmeIssuer(deps: { config: Pick<Config, 'acme'>; store: CertificateStore; now: () => Date }): AcmeIssuer {
  const { acme: settings } = deps.config;
  let loaded: Promise<{ acme: AcmeModule; client: InstanceType<AcmeModule['Client']> }> | null = null;
  const load = () =>
    (loaded ??= (async () => {
      const acme = ((await import('acme-client')) as unknown as { default: AcmeModule }).default;
      // A private CA (Pebble in the tests, an internal ACME server) is trusted for this client only.
      if (settings.caFile) acme.axios.defaults.httpsAgent = new https.Agent({ ca: readFileSync(settings.caFile) });
      const accountKey = await deps.store.accountKey(settings.directoryUrl, async () =>
        (await acme.crypto.createPrivateEcdsaKey()).toString(),
      );
      const client = new acme.Client({ directoryUrl: settings.directoryUrl, accountKey });
      // Registering an existing key returns its account (RFC 8555 §7.3.1): a node or CLI that did
      // not make the account learns its URL, which revocation needs.
      await client.createAccount({ termsOfServiceAgreed: true, ...(settings.email ? { contact: [`mailto:${settings.email}`] } : {}) });
      return { acme, client };
    })().catch((err: unknown) => {
      loaded = null; // the next attempt loads again (the directory was down, say)
      throw err;
    }));

  return {
    async issue(name) {
      const { acme, client } = await load();
      const key = await acme.crypto.createPrivateRsaKey(2048);
      const [, csr] = await acme.crypto.createCsr({ commonName: name, altNames: [name] }, key);
      const until = () => new Date(deps.now().getTime() + CHALLENGE_TTL_MS).toISOString();
      const cert = await client.auto({
        csr,
        ...(settings.email ? { email: settings.email } : {}),
        termsOfServiceAgreed: true,
        challengePriority: [settings.challenge],
        // acme-client would first fetch the answer itself through the system's resolver; the CA's
        // own validation is the one that counts, and its error says what it saw.
        skipChallengeVerification: true,
        challengeCreateFn: async (authz, challenge, keyAuthorization) => {
          await deps.store.putChallenge(tokenOf(authz.identifier.value, challenge), keyAuthorization, until());
        },
        challengeRemoveFn: async (authz, challenge) => {
          await deps.store.removeChallenge(tokenOf(authz.identifier.value, challenge));
        },
      });
      return { cert, key: key.toString(), notAfter: new Date(new X509Certificate(cert).validTo).toISOString() };
    },

    async revoke(cert) {
      const { client } = await load();
      await client.revokeCertificate(cert);
    },
  };
}

/** The self-signed certificate a TLS-ALPN-01 validation expects (RFC 8737 §3) for `name`. */
export async function alpnCertificate(name: string, keyAuthorization: string): Promise<{ key: string; cert: string }> {
  const acme = ((await import('acme-client')) as unknown as { default: AcmeModule }).default;
  const [key, cert] = await acme.crypto.createAlpnCertificate(
    { identifier: { type: 'dns', value: name } } as Parameters<AcmeModule['crypto']['createAlpnCertificate']>[0],
    keyAuthorization,
  );
  return { key: key.toString(), cert: cert.toString() };
}
