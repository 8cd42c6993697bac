// The `http` sms provider, a generic gateway for in-house SMSCs: one JSON POST per message to the
// operator's URL, signed so the gateway can tell it came from us:
//   X-Postern-Timestamp: <unix seconds>
//   X-Postern-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>
// Body: {id, to, from, body, encoding, segments, callbackUrl}. A 2xx answers the attempt; its JSON
// may say {id, status: "sent"|"delivered"|"failed", error}. 429/5xx are retried; other 4xx fail.
// The gateway may later POST {id, status, error} to callbackUrl with the same signature scheme.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ChannelTransport, DeliveryOutcome } from '../../channel.js';
import { AppError } from '../../lib/errors.js';
import { bodyTooDeep, nestsDeeperThan } from '../../lib/json-depth.js';
import { isTemporary, networkReason, providerHttp, refusedReason, retryAfter, textField } from '../provider-http.js';
import { isE164, type Provider, type ResolvedConnection, type StatusReport, type TransportDeps } from '../provider.js';
import { countSegments, segmentNote } from './segments.js';
import type { SmsOutput } from '../../contract/channels.js';

const CALLBACK_PATH = 'sms-http';
const httpSmsCallbackPath = (connectionId: string) => `/callbacks/${CALLBACK_PATH}/${connectionId}`;

export function signHttpSms(secret: string, timestamp: string, body: string): string {
  return 'v1=' + createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/** Checks a signature and that the timestamp is within five minutes of now. */
function verifyHttpSms(secret: string, timestamp: string | undefined, body: string, signature: string | undefined, nowMs: number): boolean {
  if (!timestamp || !signature || !/^\d{1,12}$/.test(timestamp)) return false;
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > 300) return false;
  const expected = Buffer.from(signHttpSms(secret, timestamp, body));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

function createHttpSmsTransport(conn: ResolvedConnection, deps: TransportDeps): ChannelTransport {
  const base = { provider: 'http', providerConnectionId: conn.id };
  const http = providerHttp(deps);
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
        res = await http.post(conn.settings.url, {
          headers: {
            'content-type': 'application/json',
            'x-postern-timestamp': timestamp,
            'x-postern-signature': signHttpSms(conn.credentials.secret, timestamp, body),
          },
          body,
          timeoutMs: deps.timeoutMs,
        });
      } catch (err) {
        const refused = refusedReason(err);
        if (refused) return { kind: 'failed', ...base, error: `sms gateway: ${refused}`, notes };
        return { kind: 'deferred', ...base, error: `sms gateway: ${networkReason(err)}`, notes };
      }
      const providerMessageId = textField(res.json, 'id');
      const said = textField(res.json, 'error');
      const reason = said !== null ? `: ${said.slice(0, 200)}` : '';
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
    close: () => http.close(),
  };
}

/** The body of a verified gateway callback: {id, status: sent|delivered|failed, error?, suppress?}. */
function gatewayReport(raw: string): StatusReport {
  let body: { id?: unknown; status?: unknown; error?: unknown; suppress?: unknown } | null;
  if (nestsDeeperThan(raw)) throw bodyTooDeep();
  try {
    body = JSON.parse(raw) as typeof body;
  } catch {
    throw new AppError('invalid_request', 'request body is not valid JSON');
  }
  const status = body?.status;
  if (typeof body?.id !== 'string' || (status !== 'sent' && status !== 'delivered' && status !== 'failed')) {
    throw new AppError('invalid_body', 'expected {id, status: sent|delivered|failed, error?}', {
      issues: [{ path: 'status', message: 'must be sent, delivered or failed' }],
    });
  }
  return {
    providerMessageId: body.id,
    status,
    ...(status === 'failed'
      ? {
          error: `sms gateway: failed${typeof body.error === 'string' ? `: ${body.error.slice(0, 200)}` : ''}`,
          suppress: body.suppress === true,
        }
      : {}),
  };
}

export const httpGateway: Provider = {
  channel: 'sms',
  name: 'http',
  describe: 'generic HTTP gateway: JSON POST signed with HMAC-SHA256',
  settings: [
    { name: 'url', kind: 'url', required: true, describe: 'URL the JSON request is POSTed to' },
    { name: 'secret', required: true, secret: true, describe: 'HMAC-SHA256 key for X-Postern-Signature' },
    { name: 'from', kind: 'e164-or-sender', describe: 'sender passed to the gateway' },
  ],
  transport: createHttpSmsTransport,
  callback: {
    path: CALLBACK_PATH,
    body: 'text',
    verify: (conn, req) =>
      verifyHttpSms(
        conn.credentials.secret,
        req.header('x-postern-timestamp'),
        req.body as string,
        req.header('x-postern-signature'),
        req.nowMs,
      ),
    report: (req) => gatewayReport(req.body as string),
  },
};
