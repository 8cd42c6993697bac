// Email's output: subject, preheader, html and text, with the preheader as hidden preview text at
// the start of the html body and a text part derived from the html when the content has none.
import type * as HtmlToText from 'html-to-text';
import { lazyRequire } from '../../lib/lazy.js';
import type { Vars } from '../spec.js';
import { renderHtml, renderText } from '../../lib/mustache.js';
import type { EmailContent, EmailOutput } from '../../contract/channels.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Puts the preheader as hidden preview text at the start of the html body. */
function insertPreheader(html: string, preheader: string): string {
  if (!preheader) return html;
  const block = `<div style="display:none;max-height:0;max-width:0;opacity:0;overflow:hidden;mso-hide:all;font-size:1px;line-height:1px;color:transparent;" aria-hidden="true">${escapeHtml(preheader)}</div>`;
  const body = /<body[^>]*>/i.exec(html);
  if (body) return html.slice(0, body.index + body[0].length) + block + html.slice(body.index + body[0].length);
  return block + html;
}

/** Plain text derived from html, for versions that have html and no text. */
// Compiled once: htmlToText() would rebuild its selector tables on every call (milliseconds each).
// Loaded at the first html without text: html-to-text and its parser are about 2 MB of heap that
// a daemon whose templates all carry text never needs.
const htmlToText = lazyRequire<typeof HtmlToText>('html-to-text');
let htmlToPlain: ((html: string) => string) | null = null;
export function textFromHtml(html: string): string {
  htmlToPlain ??= htmlToText().compile({ wordwrap: 78, selectors: [{ selector: 'img', format: 'skip' }] });
  return htmlToPlain(html);
}

export function renderEmail(c: EmailContent, vars: Vars): EmailOutput {
  const subject = renderText(c.subject, vars);
  const preheader = renderText(c.preheader, vars);
  const rawHtml = c.html ? renderHtml(c.html, vars) : '';
  const text = c.text ? renderText(c.text, vars) : rawHtml ? textFromHtml(rawHtml) : '';
  return { subject, preheader, html: rawHtml ? insertPreheader(rawHtml, preheader) : '', text };
}

export function emailVerbatim(c: EmailContent): EmailOutput {
  const html = c.html ?? '';
  const preheader = c.preheader ?? '';
  return {
    subject: c.subject ?? '',
    preheader,
    html: html ? insertPreheader(html, preheader) : '',
    text: c.text ?? (html ? textFromHtml(html) : ''),
  };
}
