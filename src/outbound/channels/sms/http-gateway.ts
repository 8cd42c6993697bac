// The generic HTTP SMS provider, for in-house gateways: one JSON POST per message to the operator's
// URL, signed so the gateway can tell it came from us:
//   X-Postern-Timestamp: <unix seconds>
//   X-Postern-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>
// Body: {id, to, from, body, encoding, segments, callbackUrl}. A 2xx answers the attempt; its JSON
// may say {id, status: "sent"|"delivered"|"failed", error}. 429/5xx are retried; other 4xx fail.
// The gateway may later POST {id, status, error} to callbackUrl with the same signature scheme.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ResolvedConnection } from '../../../connections/store.js';
import type { TransportDeps } from '../../../connections/transport-deps.js';
import { isE164 } from '../../../connections/providers.js';
import { isTemporary, networkReason, post, retryAfter } from '../../../connections/provider-http.js';
import type { SmsOutput } from '../../../templates/render.js';
import type { ChannelTransport, DeliveryOutcome } from '../channel.js';
import { countSegments, segmentNote } from './segments.js';

export const httpSmsCallbackPath = (connectionId: string) => `/callbacks/sms-http/${connectionId}`;

export function signHttpSms(secret: string, timestamp: string, body: string): string {
  return 'v1=' + createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/** Checks a signature and that the timestamp is within five minutes of now. */
export function verifyHttpSms(
  secret: string,
  timestamp: string | undefined,
  body: string,
  signature: string | undefined,
  nowMs: number,
): boolean {
  if (!timestamp || !signature || !/^\d{1,12}$/.test(timestamp)) return false;
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > 300) return false;
  const expected = Buffer.from(signHttpSms(secret, timestamp, body));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

export function createHttpSmsTransport(conn: ResolvedConnection, deps: TransportDeps): ChannelTransport {
  const base = { provider: 'http', providerConnectionId: conn.id };
  return {
    name: 'sms-http',
    async deliver({ message, content }): Promise<DeliveryOutcome> {
      if (!isE164(message.recipient)) return { kind: 'suppressed', ...base, error: 'recipient is not an E.164 phone number' };
      const text = (content as SmsOutput).body;
      const notes = [segmentNote(text)];
      const { encoding, segments } = countSegments(text);
      const body = JSON.stringify({
        id: message.publicId,
        to: message.recipient,
        from: conn.settings.from ?? null,
        body: text,
        encoding,
        segments,
        callbackUrl: deps.publicUrl().replace(/\/$/, '') + httpSmsCallbackPath(conn.id),
      });
      const timestamp = String(Math.floor(deps.clock.now().getTime() / 1000));
      let res;
      try {
        res = await post(conn.settings.url, {
          headers: {
            'content-type': 'application/json',
            'x-postern-timestamp': timestamp,
            'x-postern-signature': signHttpSms(conn.credentials.secret, timestamp, body),
          },
          body,
          timeoutMs: deps.timeoutMs,
        });
      } catch (err) {
        return { kind: 'deferred', ...base, error: `sms gateway: ${networkReason(err)}`, notes };
      }
      const providerMessageId = typeof res.json?.id === 'string' ? res.json.id : null;
      const reason = typeof res.json?.error === 'string' ? `: ${res.json.error.slice(0, 200)}` : '';
      if (res.status >= 200 && res.status < 300) {
        if (res.json?.status === 'failed')
          return { kind: 'failed', ...base, error: `sms gateway: failed${reason}`, suppress: res.json?.suppress === true, notes };
        if (res.json?.status === 'delivered') return { kind: 'delivered', ...base, providerMessageId, notes };
        return { kind: 'sent', ...base, providerMessageId, notes };
      }
      const error = `sms gateway: HTTP ${res.status}${reason}`;
      if (isTemporary(res.status)) return { kind: 'deferred', ...base, error, retryAt: retryAfter(res.headers, deps.clock), notes };
      return { kind: 'failed', ...base, error, suppress: res.json?.suppress === true, notes };
    },
  };
}
