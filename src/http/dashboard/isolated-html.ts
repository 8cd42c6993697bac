// HTML that is not the dashboard's own — received mail (hostile), a sent message's or a template's
// rendering — is never put into the dashboard page. Each is served as its own document for an
// `<iframe sandbox>`, with its own CSP: no script source at all, the CSP sandbox on top of the
// iframe's (so even opened in a tab of its own it runs nothing), only the dashboard may frame it,
// `<base target="_blank">` so links leave the frame for a new tab, and rel="noopener noreferrer"
// placed first in every link (HTML keeps the first of duplicate attributes, so a sender's own rel
// cannot override it).
import type { Response } from 'express';

/** Where images may come from: embedded only (data:, cid:), or the web as well. */
export type ImageSources = 'embedded' | 'any';

/**
 * The one rule of every isolated view (received mail, a sent message, a template preview): remote
 * images stay blocked until the operator asks for them with `?remote=1` (the dashboard's "Load
 * remote content"). Fetching them tells their server the mail was opened, from where and when; a
 * template's images may be a tracker or a third party's as much as a sender's.
 */
export function imageSourcesAsked(query: { remote?: unknown }): ImageSources {
  return query.remote === '1' ? 'any' : 'embedded';
}

function isolatedHtmlCsp(images: ImageSources): string {
  return [
    "default-src 'none'",
    "style-src 'unsafe-inline'",
    `img-src data: cid:${images === 'any' ? ' https: http:' : ''}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'self'",
    'sandbox allow-popups allow-popups-to-escape-sandbox',
  ].join('; ');
}

/** Links open in a new tab without a handle on the dashboard: base target and rel on every link. */
function isolateLinks(html: string): string {
  const withRel = html.replace(/<(a|area)(?=[\s>/])/gi, '<$1 rel="noopener noreferrer" target="_blank"');
  return `<!doctype html><meta charset="utf-8"><base target="_blank">${withRel}`;
}

/**
 * Sends an HTML document for a sandboxed iframe with its own headers. securityHeaders ran before
 * (its CSP would forbid inline styles and X-Frame-Options DENY the frame); these replace them.
 */
export function sendIsolatedHtml(res: Response, html: string, images: ImageSources): void {
  res.setHeader('Content-Security-Policy', isolatedHtmlCsp(images));
  res.setHeader('X-Frame-Options', 'SAMEORIGIN');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cache-Control', 'no-store');
  res.type('text/html; charset=utf-8').send(isolateLinks(html));
}
