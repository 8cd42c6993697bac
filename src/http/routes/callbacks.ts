// Provider status callbacks, one route per provider that reports delivery later (open routes: each
// verifies the provider's own signature with the connection's credentials, so a forged callback
// changes nothing). What a provider's request means is the provider's own (channels/<channel>/);
// this adapter reads the body the way the provider signs it, and hands a verified report to the
// sink, which moves the message whose providerMessageId and connection match.
//   POST /callbacks/twilio/{connectionId}    form-encoded, X-Twilio-Signature (HMAC-SHA1)
//   POST /callbacks/sms-http/{connectionId}  JSON {id, status, error}, X-Postern-Signature
import express, { Router } from 'express';
import { type CallbackRequest, type ConnectionStore, PROVIDERS, type ProviderStatusSink } from '../../channels/index.js';
import type { Clock } from '../../lib/clock.js';
import { AppError, notFound } from '../../lib/errors.js';

export interface CallbackDeps {
  connections: ConnectionStore;
  clock: Clock;
  publicUrl(): string;
  sink: ProviderStatusSink;
}

const LIMIT = '64kb';

export function callbackRoutes(deps: CallbackDeps): Router {
  const r = Router();
  for (const provider of PROVIDERS) {
    const cb = provider.callback;
    if (!cb) continue;
    const parse =
      cb.body === 'form' ? express.urlencoded({ extended: false, limit: LIMIT }) : express.text({ type: () => true, limit: LIMIT });
    r.post(`/callbacks/${cb.path}/:connectionId`, parse, async (req, res) => {
      const conn = await deps.connections.resolve(String(req.params.connectionId));
      if (!conn || conn.provider !== provider.name || conn.channel !== provider.channel) throw notFound('connection');
      let body: CallbackRequest['body'];
      if (cb.body === 'form') {
        const fields: Record<string, string> = {};
        for (const [k, v] of Object.entries((req.body ?? {}) as Record<string, unknown>)) if (typeof v === 'string') fields[k] = v;
        body = fields;
      } else {
        body = typeof req.body === 'string' ? req.body : '';
      }
      const request: CallbackRequest = {
        // The URL the provider was given and signs: our public URL plus this path and query.
        url: deps.publicUrl().replace(/\/$/, '') + req.originalUrl,
        body,
        header: (name) => req.header(name),
        nowMs: deps.clock.now().getTime(),
      };
      if (!cb.verify(conn, request)) throw new AppError('unauthorized', 'signature does not match');
      const report = cb.report(request);
      if (report) await deps.sink.apply({ connectionId: conn.id, provider: provider.name, ...report });
      res.status(204).end();
    });
  }
  return r;
}
