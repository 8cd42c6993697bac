// An outbound message's content for the dashboard. Rendered output is not stored (a message keeps
// its content and vars; the dispatcher renders at each attempt), so these routes render it again
// with the dispatcher's own request (outbound/dispatcher.ts renderRequestOf) and renderer
// (templates/render.ts), and compose the MIME source with the email channel's own composer
// (channels/email/prepare.ts composeEmail, through createEmailSource): the From delivery uses,
// tracking, List-Unsubscribe, the DKIM signature. It is what delivery sends, but for the Date (and
// so the signature), which delivery sets when the message goes; a test-mode message shows what a
// live one would have been.
//   /dashboard/view/messages/:id/html        the HTML alone, with its own CSP (no script; remote
//                                            images with ?remote=1 only), for an <iframe sandbox>
//   /dashboard/view/messages/:id/source.eml  the source, as a download
//   /dashboard/api/messages/:id/rendered     { channel, output, headers: [[name, value]] } (JSON)
import { Router, type Response } from 'express';
import { CHANNEL_HINTS } from '../../contract/channels.js';
import { AppError } from '../../lib/errors.js';
import { type ContentRow, rowToOutbound, scopedContentRow } from '../../messages/index.js';
import { renderRequestOf } from '../../outbound/index.js';
import { renderOutput } from '../../channels/index.js';
import { actingOn, answer, type DashboardDeps } from './context.js';
import { imageSourcesAsked, sendIsolatedHtml } from './isolated-html.js';
import type { EmailOutput } from '../../contract/channels.js';

async function rowOf(deps: DashboardDeps, res: Response, publicId: string): Promise<ContentRow> {
  const { workspace, env } = await actingOn(deps, res);
  return scopedContentRow(deps.db, { workspaceId: workspace.id, livemode: env === 'live' }, publicId);
}

function rendered(row: ContentRow) {
  try {
    return renderOutput(renderRequestOf(row));
  } catch (err) {
    throw new AppError('conflict', `the message content cannot be rendered: ${(err as Error).message}`);
  }
}

/** The message as delivery composes it, dated when it was accepted (a delivery is dated when it goes). */
async function source(deps: DashboardDeps, row: ContentRow): Promise<Buffer> {
  if (!CHANNEL_HINTS[row.channel].mime) throw new AppError('not_found', 'only an email message has a MIME source');
  return deps.emailSource(rowToOutbound(row), rendered(row) as EmailOutput, new Date(row.created_at));
}

/** The headers of a composed source, unfolded, in order. */
function headersOf(raw: Buffer): [string, string][] {
  const text = raw.toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  const block = (end < 0 ? text : text.slice(0, end)).replace(/\r\n[ \t]+/g, ' ');
  return block
    .split('\r\n')
    .filter(Boolean)
    .map((l) => {
      const i = l.indexOf(':');
      return [l.slice(0, i), l.slice(i + 1).trim()] as [string, string];
    });
}

/** Mounted at /dashboard/view (beside the inbound view). */
export function messageViewRoutes(deps: DashboardDeps): Router {
  const r = Router();
  r.get('/messages/:id/html', async (req, res) => {
    const row = await rowOf(deps, res, String(req.params.id));
    if (!CHANNEL_HINTS[row.channel].mime) throw new AppError('not_found', 'only an email message has HTML');
    const out = rendered(row) as EmailOutput;
    sendIsolatedHtml(res, out.html || '<p>(no HTML part)</p>', imageSourcesAsked(req.query));
  });
  r.get('/messages/:id/source.eml', async (req, res) => {
    const row = await rowOf(deps, res, String(req.params.id));
    const raw = await source(deps, row);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Content-Disposition', `attachment; filename="${row.public_id}.eml"`);
    res.type('message/rfc822').send(raw);
  });
  return r;
}

/** Mounted at /dashboard/api. */
export function messageApiRoutes(deps: DashboardDeps): Router {
  const r = Router();
  r.get('/messages/:id/rendered', async (req, res) => {
    const row = await rowOf(deps, res, String(req.params.id));
    const output = rendered(row);
    answer(res, 'GET /dashboard/api/messages/:id/rendered', {
      channel: row.channel,
      output,
      headers: CHANNEL_HINTS[row.channel].mime ? headersOf(await source(deps, row)) : [],
    });
  });
  return r;
}
