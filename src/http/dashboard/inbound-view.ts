// Received mail's HTML, served alone for the sandboxed iframe of the message detail. Received mail
// is hostile: the stored HTML is the sender's, as sent. It is never put into the dashboard page;
// this route serves it as its own document with its own CSP (no script-src at all, the CSP sandbox
// on top of the iframe's, remote images only when the operator asks with ?remote=1), a
// `<base target="_blank">` so links leave the frame for a new tab, and rel="noopener noreferrer"
// placed first in every link (HTML keeps the first of duplicate attributes, so the sender's own
// rel cannot override it).
import { Router, type Response } from 'express';
import { actingOn, type DashboardDeps } from './context.js';

/** The CSP of received mail: nothing but inline styles and embedded images (remote ones on request). */
export function receivedMailCsp(remote: boolean): string {
  return [
    "default-src 'none'",
    "style-src 'unsafe-inline'",
    `img-src data: cid:${remote ? ' https: http:' : ''}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'self'",
    'sandbox allow-popups allow-popups-to-escape-sandbox',
  ].join('; ');
}

/** Links open in a new tab without a handle on the dashboard: base target and rel on every link. */
export function isolateLinks(html: string): string {
  const withRel = html.replace(/<(a|area)(?=[\s>/])/gi, '<$1 rel="noopener noreferrer" target="_blank"');
  return `<!doctype html><meta charset="utf-8"><base target="_blank">${withRel}`;
}

/**
 * Sends an HTML document for a sandboxed iframe with its own headers. securityHeaders ran before
 * (its CSP would forbid inline styles and X-Frame-Options DENY the frame); these replace them.
 */
export function sendIsolatedHtml(res: Response, html: string, csp: string): void {
  res.setHeader('Content-Security-Policy', csp);
  res.setHeader('X-Frame-Options', 'SAMEORIGIN');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cache-Control', 'no-store');
  res.type('text/html; charset=utf-8').send(isolateLinks(html));
}

export function inboundViewRoutes(deps: DashboardDeps): Router {
  const r = Router();
  r.get('/inbound/:id', async (req, res) => {
    const { workspace, env } = await actingOn(deps, res);
    const message = await deps.received.detail(workspace.id, env === 'live', req.params.id);
    sendIsolatedHtml(res, message.html || '<p>(This message has no HTML part.)</p>', receivedMailCsp(req.query.remote === '1'));
  });
  return r;
}
