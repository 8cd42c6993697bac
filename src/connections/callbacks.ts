// Provider status callbacks (open routes: each verifies the provider's own signature with the
// connection's credentials, so a forged callback changes nothing). Verified reports go to a
// ProviderStatusSink, which moves the message whose providerMessageId and connection match.
//   POST /callbacks/twilio/{connectionId}    form-encoded, X-Twilio-Signature (HMAC-SHA1)
//   POST /callbacks/sms-http/{connectionId}  JSON {id, status, error}, X-Postern-Signature
import express, { Router } from 'express';
import type { Clock } from '../lib/clock.js';
import { AppError, notFound } from '../lib/errors.js';
import { mapTwilioStatus, verifyTwilioSignature } from '../outbound/channels/sms/twilio.js';
import { verifyHttpSms } from '../outbound/channels/sms/http-gateway.js';
import type { ConnectionStore } from './store.js';

export interface ProviderStatusUpdate {
  connectionId: string;
  provider: string;
  providerMessageId: string;
  status: 'sent' | 'delivered' | 'failed';
  error?: string;
  suppress?: boolean;
}

export interface ProviderStatusSink {
  /** Applies the report to the matching message; false when none matches (or it is already final). */
  apply(update: ProviderStatusUpdate): Promise<boolean>;
}

export interface CallbackDeps {
  connections: ConnectionStore;
  clock: Clock;
  publicUrl(): string;
  sink: ProviderStatusSink;
}

const forged = () => new AppError('unauthorized', 'signature does not match');

export function callbackRoutes(deps: CallbackDeps): Router {
  const r = Router();

  r.post('/callbacks/twilio/:connectionId', express.urlencoded({ extended: false, limit: '64kb' }), async (req, res) => {
    const conn = await deps.connections.resolve(String(req.params.connectionId));
    if (!conn || conn.provider !== 'twilio') throw notFound('connection');
    const params: Record<string, string> = {};
    for (const [k, v] of Object.entries((req.body ?? {}) as Record<string, unknown>)) if (typeof v === 'string') params[k] = v;
    // Twilio signs the URL it was given: our public URL plus this path and query.
    const url = deps.publicUrl().replace(/\/$/, '') + req.originalUrl;
    if (!verifyTwilioSignature(conn.credentials.authToken, url, params, req.header('x-twilio-signature'))) throw forged();
    const mapped = mapTwilioStatus(params);
    const sid = params.MessageSid ?? params.SmsSid;
    if (mapped && sid) await deps.sink.apply({ connectionId: conn.id, provider: 'twilio', providerMessageId: sid, ...mapped });
    res.status(204).end();
  });

  r.post('/callbacks/sms-http/:connectionId', express.text({ type: () => true, limit: '64kb' }), async (req, res) => {
    const conn = await deps.connections.resolve(String(req.params.connectionId));
    if (!conn || conn.provider !== 'http' || conn.channel !== 'sms') throw notFound('connection');
    const raw = typeof req.body === 'string' ? req.body : '';
    if (
      !verifyHttpSms(
        conn.credentials.secret,
        req.header('x-postern-timestamp'),
        raw,
        req.header('x-postern-signature'),
        deps.clock.now().getTime(),
      )
    )
      throw forged();
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      throw new AppError('invalid_request', 'request body is not valid JSON');
    }
    if (typeof body?.id !== 'string' || !['sent', 'delivered', 'failed'].includes(body?.status)) {
      throw new AppError('invalid_body', 'expected {id, status: sent|delivered|failed, error?}', {
        issues: [{ path: 'status', message: 'must be sent, delivered or failed' }],
      });
    }
    await deps.sink.apply({
      connectionId: conn.id,
      provider: 'http',
      providerMessageId: body.id,
      status: body.status,
      ...(body.status === 'failed'
        ? {
            error: `sms gateway: failed${typeof body.error === 'string' ? `: ${body.error.slice(0, 200)}` : ''}`,
            suppress: body.suppress === true,
          }
        : {}),
    });
    res.status(204).end();
  });

  return r;
}
