// The `twilio` sms provider: the Twilio Messages API (or any gateway that speaks it).
// POST {baseUrl}/2010-04-01/Accounts/{sid}/Messages.json, form-encoded, basic auth with the account
// SID and auth token, a StatusCallback on our public URL. Twilio answers 201 with the message SID
// (our providerMessageId) and reports delivered/undelivered/failed later to the callback
// /callbacks/twilio/{connectionId}, signed with X-Twilio-Signature (HMAC-SHA1 of the URL and the
// sorted form fields, keyed by the auth token).
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ChannelTransport, DeliveryOutcome } from '../../channel.js';
import { isTemporary, networkReason, providerHttp, refusedReason, retryAfter, textField } from '../provider-http.js';
import { isE164, type Provider, type ResolvedConnection, type StatusReport, type TransportDeps } from '../provider.js';
import { segmentNote } from './segments.js';
import type { SmsOutput } from '../../contract/channels.js';

// Twilio error codes that mean the number will never take a message from us: invalid or
// non-mobile number, or the recipient replied STOP. Their failure suppresses the recipient.
const SUPPRESSING_CODES = new Set([21211, 21214, 21610, 21612, 21614, 30005, 30006]);

/** The path Twilio calls back on for a connection's messages. */
const twilioCallbackPath = (connectionId: string) => `/callbacks/twilio/${connectionId}`;

export function createTwilioTransport(conn: ResolvedConnection, deps: TransportDeps): ChannelTransport {
  const { accountSid, from, messagingServiceSid } = conn.settings;
  const baseUrl = conn.settings.baseUrl.replace(/\/$/, '');
  const auth = 'Basic ' + Buffer.from(`${accountSid}:${conn.credentials.authToken}`).toString('base64');
  const base = { provider: 'twilio', providerConnectionId: conn.id };
  const http = providerHttp(deps);

  return {
    name: 'twilio',
    async deliver({ message, content }): Promise<DeliveryOutcome> {
      if (!isE164(message.recipient)) return { kind: 'suppressed', ...base, error: 'recipient is not an E.164 phone number' };
      const body = (content as SmsOutput).body;
      const notes = [segmentNote(body)];
      const form = new URLSearchParams({ To: message.recipient, Body: body });
      if (messagingServiceSid) form.set('MessagingServiceSid', messagingServiceSid);
      if (from) form.set('From', from);
      form.set('StatusCallback', deps.publicUrl().replace(/\/$/, '') + twilioCallbackPath(conn.id));

      let res;
      try {
        res = await http.post(`${baseUrl}/2010-04-01/Accounts/${encodeURIComponent(accountSid)}/Messages.json`, {
          headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          body: form.toString(),
          timeoutMs: deps.timeoutMs,
        });
      } catch (err) {
        const refused = refusedReason(err);
        if (refused) return { kind: 'failed', ...base, error: `twilio: ${refused}`, notes };
        return { kind: 'deferred', ...base, error: `twilio: ${networkReason(err)}`, notes };
      }
      if (res.status >= 200 && res.status < 300) {
        const sid = textField(res.json, 'sid');
        const status = textField(res.json, 'status');
        if (status === 'failed' || status === 'undelivered') {
          return {
            kind: 'failed',
            ...base,
            error: `twilio: ${status} (${textField(res.json, 'error_code') ?? (typeof res.json?.error_code === 'number' ? res.json.error_code : 'no code')})`,
            notes,
          };
        }
        if (status === 'delivered') return { kind: 'delivered', ...base, providerMessageId: sid, notes };
        return { kind: 'sent', ...base, providerMessageId: sid, notes };
      }
      const code = Number(res.json?.code) || null;
      const said = textField(res.json, 'message');
      const error = `twilio: HTTP ${res.status}${code ? ` error ${code}` : ''}${said !== null ? `: ${said.slice(0, 200)}` : ''}`;
      if (isTemporary(res.status)) return { kind: 'deferred', ...base, error, retryAt: retryAfter(res.headers, deps.clock), notes };
      return { kind: 'failed', ...base, error, suppress: code !== null && SUPPRESSING_CODES.has(code), notes };
    },
    close: () => http.close(),
  };
}

/**
 * Twilio's request signature: base64 HMAC-SHA1, keyed by the auth token, of the full URL Twilio
 * called followed by every POST parameter name and value, names sorted.
 */
export function twilioSignature(authToken: string, url: string, params: Record<string, string>): string {
  const data =
    url +
    Object.keys(params)
      .sort()
      .map((k) => k + params[k])
      .join('');
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

function verifyTwilioSignature(authToken: string, url: string, params: Record<string, string>, signature: string | undefined): boolean {
  if (!signature) return false;
  const expected = Buffer.from(twilioSignature(authToken, url, params));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** What a Twilio MessageStatus means for our message; null for intermediate states we ignore. */
export function mapTwilioStatus(
  params: Record<string, string>,
): { status: 'sent' | 'delivered' | 'failed'; error?: string; suppress?: boolean } | null {
  const s = params.MessageStatus ?? params.SmsStatus;
  const code = Number(params.ErrorCode) || null;
  switch (s) {
    case 'sent':
      return { status: 'sent' };
    case 'delivered':
      return { status: 'delivered' };
    case 'undelivered':
    case 'failed':
      return {
        status: 'failed',
        error: `twilio: ${s}${code ? ` (error ${code})` : ''}`,
        suppress: code !== null && SUPPRESSING_CODES.has(code),
      };
    default:
      return null;
  }
}

export const twilio: Provider = {
  channel: 'sms',
  name: 'twilio',
  describe: 'Twilio Messages API (or any gateway that speaks it)',
  settings: [
    { name: 'accountSid', required: true, describe: 'Account SID (AC…)' },
    { name: 'authToken', required: true, secret: true, describe: 'auth token; also validates status callbacks' },
    { name: 'from', kind: 'e164-or-sender', describe: 'sender: E.164 number, short code or alphanumeric sender id' },
    { name: 'messagingServiceSid', describe: 'Messaging Service SID (MG…), instead of from' },
    { name: 'baseUrl', kind: 'url', default: 'https://api.twilio.com', describe: 'API base URL' },
  ],
  check: (v) => (v.from || v.messagingServiceSid ? [] : [{ path: 'from', message: 'twilio needs from or messagingServiceSid' }]),
  transport: createTwilioTransport,
  callback: {
    path: 'twilio',
    body: 'form',
    // Twilio signs the URL it was given: our public URL plus the path and query.
    verify: (conn, req) =>
      verifyTwilioSignature(conn.credentials.authToken, req.url, req.body as Record<string, string>, req.header('x-twilio-signature')),
    report(req): StatusReport | null {
      const params = req.body as Record<string, string>;
      const mapped = mapTwilioStatus(params);
      const sid = params.MessageSid ?? params.SmsSid;
      return mapped && sid ? { providerMessageId: sid, ...mapped } : null;
    },
  },
};
