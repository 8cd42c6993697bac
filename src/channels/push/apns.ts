// APNs over HTTP/2 (node:http2) with token authentication. The provider token is an ES256 JWT
// {iss: teamId, iat} with header {kid: keyId}, signed with the .p8 key. Apple rejects tokens older
// than an hour and throttles ones refreshed more than every 20 minutes, so we reuse one for 50
// minutes (by the injected clock). One HTTP/2 session per connection carries every request and is
// reopened when it closes. Answers: 200 → sent (apns-id is the providerMessageId; APNs never reports
// delivery); 410 Unregistered and 400 BadDeviceToken/DeviceTokenNotForTopic → failed, token
// suppressed; 429/5xx → deferred; 403 ExpiredProviderToken → new token, deferred.
import http2 from 'node:http2';
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { signJwt } from './jwt.js';
import type { ChannelTransport, DeliveryOutcome } from '../../channel.js';
import { guardedLookup, literalAddressProblem } from '../../lib/ssrf.js';
import { refusedReason, retryAfter, trustedCas } from '../provider-http.js';
import type { Provider, ResolvedConnection, TransportDeps } from '../provider.js';
import type { PushOutput } from '../../contract/channels.js';

const TOKEN_LIFETIME_MS = 50 * 60 * 1000;
const SUPPRESSING_REASONS = new Set(['Unregistered', 'BadDeviceToken', 'DeviceTokenNotForTopic']);

/** The JSON APNs receives: aps with alert/badge/sound, custom data beside it. */
function apnsPayload(content: PushOutput): { payload: Record<string, unknown>; pushType: 'alert' | 'background' } {
  const aps: Record<string, unknown> = {};
  const hasAlert = Boolean(content.title || content.body);
  if (hasAlert) aps.alert = content.title ? { title: content.title, body: content.body } : { body: content.body };
  else aps['content-available'] = 1;
  if (content.badge !== null && content.badge !== undefined) aps.badge = content.badge;
  if (content.sound) aps.sound = content.sound;
  const { aps: _ignored, ...data } = content.data ?? {};
  return { payload: { ...data, aps }, pushType: hasAlert ? 'alert' : 'background' };
}

export function createApnsTransport(conn: ResolvedConnection, deps: TransportDeps): ChannelTransport {
  const { teamId, keyId, topic } = conn.settings;
  const alertType = conn.settings.pushType || 'alert';
  const key: KeyObject = createPrivateKey(conn.credentials.key);
  const base = { provider: 'apns', providerConnectionId: conn.id };
  let session: http2.ClientHttp2Session | null = null;
  // Why the last session failed, when the SSRF guard refused its destination.
  let refused: string | null = null;
  let token: { jwt: string; issuedAt: number } | null = null;

  const providerToken = (): string => {
    const now = deps.clock.now().getTime();
    if (!token || now - token.issuedAt >= TOKEN_LIFETIME_MS || now < token.issuedAt) {
      token = { jwt: signJwt('ES256', key, { kid: keyId }, { iss: teamId, iat: Math.floor(now / 1000) }), issuedAt: now };
    }
    return token.jwt;
  };

  const connect = (): http2.ClientHttp2Session => {
    if (session && !session.closed && !session.destroyed) return session;
    // The base URL's host passes the SSRF guard on the address dialled; the CA is trusted besides the system's.
    const ca = trustedCas(conn.settings.ca);
    const s = http2.connect(conn.settings.baseUrl, { lookup: guardedLookup(deps.ssrf, deps.dns), ...(ca ? { ca } : {}) });
    refused = null;
    s.on('error', (err) => {
      refused = refusedReason(err);
      deps.log.warn({ connection: conn.id, code: (err as NodeJS.ErrnoException).code }, 'apns session error');
    });
    s.on('goaway', () => s.close());
    s.on('close', () => {
      if (session === s) session = null;
    });
    s.unref();
    session = s;
    return s;
  };

  const send = (deviceToken: string, headers: Record<string, string>, body: string) =>
    new Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const s = connect();
      s.ref();
      const req = s.request({ ':method': 'POST', ':path': `/3/device/${deviceToken}`, ...headers });
      let data = '';
      let head: http2.IncomingHttpHeaders = {};
      req.setEncoding('utf8');
      req.setTimeout(deps.timeoutMs, () => req.close(http2.constants.NGHTTP2_CANCEL));
      req.on('response', (h) => (head = h));
      req.on('data', (c: string) => (data += c));
      req.on('end', () => resolve({ status: Number(head[':status']), headers: head, body: data }));
      req.on('close', () => {
        if (!head[':status'])
          reject(new Error(req.rstCode === http2.constants.NGHTTP2_CANCEL ? 'timed out' : `stream closed (${req.rstCode})`));
      });
      req.on('error', reject);
      req.end(body);
    }).finally(() => {
      if (session && !session.destroyed) session.unref();
    });

  return {
    name: 'apns',
    async deliver({ message, content }): Promise<DeliveryOutcome> {
      const deviceToken = message.recipient;
      if (!/^[0-9a-fA-F]{64,200}$/.test(deviceToken))
        return { kind: 'suppressed', ...base, error: 'recipient is not an APNs device token (hex)' };
      const literal = literalAddressProblem(deps.ssrf, new URL(conn.settings.baseUrl));
      if (literal) return { kind: 'failed', ...base, error: `apns: ${literal.message}` };
      const { payload, pushType } = apnsPayload(content as PushOutput);
      const type = pushType === 'alert' ? alertType : 'background';
      let res;
      try {
        res = await send(
          deviceToken,
          {
            authorization: `bearer ${providerToken()}`,
            'apns-topic': topic,
            'apns-push-type': type,
            'apns-priority': type === 'background' ? '5' : '10',
            'content-type': 'application/json',
          },
          JSON.stringify(payload),
        );
      } catch (err) {
        if (refused) return { kind: 'failed', ...base, error: `apns: ${refused}` };
        return { kind: 'deferred', ...base, error: `apns: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` };
      }
      const apnsId = typeof res.headers['apns-id'] === 'string' ? res.headers['apns-id'] : null;
      if (res.status === 200) return { kind: 'sent', ...base, providerMessageId: apnsId };
      let reason = '';
      try {
        reason = String(JSON.parse(res.body).reason ?? '');
      } catch {
        // no JSON body
      }
      const error = `apns: HTTP ${res.status}${reason ? ` ${reason}` : ''}`;
      if (res.status === 410 || SUPPRESSING_REASONS.has(reason)) return { kind: 'failed', ...base, error, suppress: true };
      if (res.status === 403 && reason === 'ExpiredProviderToken') {
        token = null;
        return { kind: 'deferred', ...base, error };
      }
      if (res.status === 429 || res.status >= 500)
        return { kind: 'deferred', ...base, error, retryAt: retryAfter(res.headers, deps.clock) };
      return { kind: 'failed', ...base, error };
    },
    async close() {
      const s = session;
      session = null;
      if (s && !s.destroyed) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}

export const apns: Provider = {
  channel: 'push',
  name: 'apns',
  describe: 'Apple Push Notification service, HTTP/2 with token (.p8) auth',
  settings: [
    { name: 'teamId', required: true, describe: 'Apple developer team id (JWT iss)' },
    { name: 'keyId', required: true, describe: 'id of the .p8 signing key (JWT kid)' },
    { name: 'key', required: true, secret: true, file: true, describe: 'the .p8 private key (PEM)' },
    { name: 'topic', required: true, describe: 'apns-topic: the app bundle id' },
    { name: 'pushType', default: 'alert', describe: 'apns-push-type when the message has a title or body' },
    { name: 'baseUrl', kind: 'url', default: 'https://api.push.apple.com', describe: 'https://api.sandbox.push.apple.com for development' },
    { name: 'ca', file: true, describe: 'extra trusted CA certificate (PEM) for a private gateway' },
  ],
  check: (v) =>
    v.baseUrl && !v.baseUrl.startsWith('https:') && !v.baseUrl.startsWith('http:')
      ? [{ path: 'baseUrl', message: 'must be an http(s) URL' }]
      : [],
  transport: createApnsTransport,
};
