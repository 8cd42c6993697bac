// FCM HTTP v1 with a service account. The account's RS256-signed JWT assertion {iss: clientEmail,
// scope: firebase.messaging, aud: tokenUrl, iat, exp: iat+1h} is exchanged at tokenUrl for an OAuth
// access token, cached until a minute before it expires (by the injected clock); concurrent sends
// share one exchange. Answers: 200 {name} → sent (name is the providerMessageId); UNREGISTERED →
// failed, token suppressed; 401 → token dropped, deferred; 429/5xx → deferred; other 4xx → failed.
import { createPrivateKey, type KeyObject } from 'node:crypto';
import type { ResolvedConnection } from '../../../connections/store.js';
import type { TransportDeps } from '../../../connections/transport-deps.js';
import { isTemporary, networkReason, post, retryAfter } from '../../../connections/provider-http.js';
import type { PushOutput } from '../../../templates/render.js';
import type { ChannelTransport, DeliveryOutcome } from '../channel.js';
import { signJwt } from './jwt.js';

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
export function fcmMessage(token: string, content: PushOutput): Record<string, unknown> {
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

function fcmErrorCode(json: any): string | null {
  const details = json?.error?.details;
  if (Array.isArray(details)) {
    for (const d of details) if (typeof d?.errorCode === 'string') return d.errorCode;
  }
  return typeof json?.error?.status === 'string' ? json.error.status : null;
}

export function createFcmTransport(conn: ResolvedConnection, deps: TransportDeps): ChannelTransport {
  const { projectId, clientEmail, tokenUrl, privateKeyId } = conn.settings;
  const baseUrl = conn.settings.baseUrl.replace(/\/$/, '');
  const key: KeyObject = createPrivateKey(conn.credentials.privateKey);
  const base = { provider: 'fcm', providerConnectionId: conn.id };
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
      res = await post(tokenUrl, {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
        timeoutMs: deps.timeoutMs,
      });
    } catch (err) {
      throw new TokenError(`fcm token exchange: ${networkReason(err)}`, true);
    }
    if (res.status !== 200 || typeof res.json?.access_token !== 'string') {
      const why = typeof res.json?.error === 'string' ? ` ${res.json.error}` : '';
      throw new TokenError(`fcm token exchange: HTTP ${res.status}${why}`, isTemporary(res.status));
    }
    const lifetime = Number(res.json.expires_in) || 3600;
    cached = { token: res.json.access_token, expiresAt: deps.clock.now().getTime() + (lifetime - 60) * 1000 };
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
      if (!/^[\w:.\-]{16,4096}$/.test(message.recipient))
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
        res = await post(`${baseUrl}/v1/projects/${encodeURIComponent(projectId)}/messages:send`, {
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ message: fcmMessage(message.recipient, content as PushOutput) }),
          timeoutMs: deps.timeoutMs,
        });
      } catch (err) {
        return { kind: 'deferred', ...base, error: `fcm: ${networkReason(err)}` };
      }
      if (res.status === 200)
        return { kind: 'sent', ...base, providerMessageId: typeof res.json?.name === 'string' ? res.json.name : null };
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
  };
}
