// FCM HTTP v1 with a service account. The account's RS256-signed JWT assertion {iss: clientEmail,
// scope: firebase.messaging, aud: tokenUrl, iat, exp: iat+1h} is exchanged at tokenUrl for an OAuth
// access token, cached until a minute before it expires (by the injected clock); concurrent sends
// share one exchange. Answers: 200 {name} → sent (name is the providerMessageId); UNREGISTERED →
// failed, token suppressed; 401 → token dropped, deferred; 429/5xx → deferred; other 4xx → failed.
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { signJwt } from './jwt.js';
import type { ChannelTransport, DeliveryOutcome } from '../../channel.js';
import { isTemporary, networkReason, providerHttp, refusedReason, retryAfter, textField, type ProviderJson } from '../provider-http.js';
import type { Provider, ResolvedConnection, TransportDeps } from '../provider.js';
import type { PushOutput } from '../../contract/channels.js';

export const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';

class TokenError extends Error {
  constructor(
    message: string,
    readonly temporary: boolean,
  ) {
    super(message);
  }
}

/** The FCM v1 message for a rendered push. Data values must be strings in FCM, so others are JSON. */
function fcmMessage(token: string, content: PushOutput): Record<string, unknown> {
  const message: Record<string, unknown> = { token };
  if (content.title || content.body) message.notification = { ...(content.title ? { title: content.title } : {}), body: content.body };
  const data = Object.entries(content.data ?? {});
  if (data.length) message.data = Object.fromEntries(data.map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  const aps: Record<string, unknown> = {};
  if (content.badge !== null && content.badge !== undefined) aps.badge = content.badge;
  if (content.sound) {
    aps.sound = content.sound;
    message.android = { notification: { sound: content.sound } };
  }
  if (Object.keys(aps).length) message.apns = { payload: { aps } };
  return message;
}

function fcmErrorCode(json: ProviderJson): string | null {
  const error = json?.error as { details?: unknown; status?: unknown } | undefined;
  if (Array.isArray(error?.details)) {
    for (const d of error.details as { errorCode?: unknown }[]) if (typeof d?.errorCode === 'string') return d.errorCode;
  }
  return typeof error?.status === 'string' ? error.status : null;
}

export function createFcmTransport(conn: ResolvedConnection, deps: TransportDeps): ChannelTransport {
  const { projectId, clientEmail, tokenUrl, privateKeyId } = conn.settings;
  const baseUrl = conn.settings.baseUrl.replace(/\/$/, '');
  const key: KeyObject = createPrivateKey(conn.credentials.privateKey);
  const base = { provider: 'fcm', providerConnectionId: conn.id };
  const http = providerHttp(deps, { ca: conn.settings.ca });
  let cached: { token: string; expiresAt: number } | null = null;
  let pending: Promise<string> | null = null;

  const exchange = async (): Promise<string> => {
    const iat = Math.floor(deps.clock.now().getTime() / 1000);
    const assertion = signJwt('RS256', key, privateKeyId ? { kid: privateKeyId } : {}, {
      iss: clientEmail,
      scope: FCM_SCOPE,
      aud: tokenUrl,
      iat,
      exp: iat + 3600,
    });
    let res;
    try {
      res = await http.post(tokenUrl, {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
        timeoutMs: deps.timeoutMs,
      });
    } catch (err) {
      const refused = refusedReason(err);
      throw new TokenError(`fcm token exchange: ${refused ?? networkReason(err)}`, refused === null);
    }
    const accessToken = textField(res.json, 'access_token');
    if (res.status !== 200 || accessToken === null) {
      const said = textField(res.json, 'error');
      const why = said !== null ? ` ${said}` : '';
      throw new TokenError(`fcm token exchange: HTTP ${res.status}${why}`, isTemporary(res.status));
    }
    const lifetime = Number(res.json?.expires_in) || 3600;
    cached = { token: accessToken, expiresAt: deps.clock.now().getTime() + (lifetime - 60) * 1000 };
    return cached.token;
  };

  const accessToken = (): Promise<string> => {
    if (cached && deps.clock.now().getTime() < cached.expiresAt) return Promise.resolve(cached.token);
    pending ??= exchange().finally(() => (pending = null));
    return pending;
  };

  return {
    name: 'fcm',
    async deliver({ message, content }): Promise<DeliveryOutcome> {
      if (!/^[\w:.-]{16,4096}$/.test(message.recipient))
        return { kind: 'suppressed', ...base, error: 'recipient is not an FCM registration token' };
      let token;
      try {
        token = await accessToken();
      } catch (err) {
        const e = err as TokenError;
        return e.temporary ? { kind: 'deferred', ...base, error: e.message } : { kind: 'failed', ...base, error: e.message };
      }
      let res;
      try {
        res = await http.post(`${baseUrl}/v1/projects/${encodeURIComponent(projectId)}/messages:send`, {
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ message: fcmMessage(message.recipient, content as PushOutput) }),
          timeoutMs: deps.timeoutMs,
        });
      } catch (err) {
        const refused = refusedReason(err);
        if (refused) return { kind: 'failed', ...base, error: `fcm: ${refused}` };
        return { kind: 'deferred', ...base, error: `fcm: ${networkReason(err)}` };
      }
      if (res.status === 200) return { kind: 'sent', ...base, providerMessageId: textField(res.json, 'name') };
      const code = fcmErrorCode(res.json);
      const error = `fcm: HTTP ${res.status}${code ? ` ${code}` : ''}`;
      if (code === 'UNREGISTERED') return { kind: 'failed', ...base, error, suppress: true };
      if (res.status === 401) {
        cached = null;
        return { kind: 'deferred', ...base, error };
      }
      if (isTemporary(res.status)) return { kind: 'deferred', ...base, error, retryAt: retryAfter(res.headers, deps.clock) };
      return { kind: 'failed', ...base, error };
    },
    close: () => http.close(),
  };
}

export const fcm: Provider = {
  channel: 'push',
  name: 'fcm',
  describe: 'Firebase Cloud Messaging HTTP v1 with a service account',
  settings: [
    { name: 'projectId', required: true, describe: 'Firebase project id' },
    { name: 'clientEmail', required: true, describe: 'service account e-mail (JWT iss)' },
    { name: 'privateKey', required: true, secret: true, file: true, describe: 'service account private key (PEM)' },
    { name: 'privateKeyId', describe: 'service account key id (JWT kid)' },
    { name: 'tokenUrl', kind: 'url', default: 'https://oauth2.googleapis.com/token', describe: 'OAuth token endpoint' },
    { name: 'baseUrl', kind: 'url', default: 'https://fcm.googleapis.com', describe: 'FCM API base URL' },
    { name: 'ca', file: true, describe: 'extra trusted CA certificate (PEM) for a private gateway' },
  ],
  transport: createFcmTransport,
};
