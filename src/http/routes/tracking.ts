// The public tracking routes (no API key; each verifies its signed token):
//   GET  /t/o/:token  open pixel (a 1×1 GIF, never cached)
//   GET  /t/c/:token  click: 302 to the link that was signed into the token, nothing else
//   GET  /u/:token    unsubscribe page with a confirm button (GET never unsubscribes: link
//                     scanners and prefetchers follow GETs)
//   POST /u/:token    one-click unsubscribe (RFC 8058 `List-Unsubscribe=One-Click`) and the page's
//                     button: records an opt-out for the recipient in the workspace
import express, { Router } from 'express';
import type { Engagement, TokenSigner } from '../../channels/email/index.js';
import { AppError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { SuppressionStore } from '../../suppressions/index.js';

const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

export interface TrackingRouteDeps {
  tokens(): Promise<TokenSigner>;
  engage(publicId: string, kind: Engagement, link?: string): Promise<boolean>;
  suppressions: SuppressionStore;
  log: Logger;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function trackingRoutes(deps: TrackingRouteDeps): Router {
  const r = Router();
  r.get('/t/o/:token', async (req, res) => {
    const p = (await deps.tokens()).verify(String(req.params.token), 'open');
    if (p) await deps.engage(p.m, 'opened').catch((err) => deps.log.warn({ err }, 'recording an open failed'));
    res.set({ 'content-type': 'image/gif', 'cache-control': 'no-store, max-age=0' }).send(PIXEL);
  });
  r.get('/t/c/:token', async (req, res) => {
    const p = (await deps.tokens()).verify(String(req.params.token), 'click');
    if (!p || !p.u || !/^https?:\/\//i.test(p.u)) throw new AppError('not_found', 'unknown link');
    await deps.engage(p.m, 'clicked', p.u).catch((err) => deps.log.warn({ err }, 'recording a click failed'));
    res.set('cache-control', 'no-store').redirect(302, p.u);
  });
  const unsubscribeTarget = async (token: string) => {
    const p = (await deps.tokens()).verify(token, 'unsubscribe');
    if (!p || !p.w || !p.r) throw new AppError('not_found', 'unknown unsubscribe link');
    return p;
  };
  r.get('/u/:token', async (req, res) => {
    const p = await unsubscribeTarget(String(req.params.token));
    res
      .type('html')
      .send(
        `<!doctype html><meta charset="utf-8"><title>Unsubscribe</title><form method="post"><p>Stop these emails to ${escapeHtml(p.r!)}?</p><button type="submit" name="List-Unsubscribe" value="One-Click">Unsubscribe</button></form>`,
      );
  });
  r.post('/u/:token', express.urlencoded({ extended: false, limit: '4kb' }), async (req, res) => {
    const p = await unsubscribeTarget(String(req.params.token));
    // Only live mail carries an unsubscribe link: test keys never reach a mailbox.
    await deps.suppressions.add(
      { workspaceId: p.w!, livemode: true },
      { address: p.r!, reason: 'unsubscribe', detail: 'one-click unsubscribe', messageId: p.m },
    );
    res.type('html').send('<!doctype html><meta charset="utf-8"><title>Unsubscribed</title><p>You are unsubscribed.</p>');
  });
  return r;
}
