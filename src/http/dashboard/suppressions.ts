// The suppression list as a CSV download (the page lists and searches through /v1/suppressions),
// streamed page by page from the suppression store so a list of 100k addresses never sits in
// memory. The list is the one of the workspace and environment the session acts on, as the page's.
import { Router } from 'express';
import { csvQuote } from '../../lib/csv.js';
import { actingOn, type DashboardDeps } from './context.js';

/** One CSV field for a spreadsheet: quoted when it must be, and a leading =+-@ defused. */
function csvField(value: string | null): string {
  const v = value ?? '';
  return csvQuote(/^[=+\-@\t\r]/.test(v) ? `'${v}` : v);
}

export function suppressionExportRoutes(deps: DashboardDeps): Router {
  const r = Router();

  r.get('/suppressions.csv', async (_req, res) => {
    const { workspace, env } = await actingOn(deps, res);
    res.setHeader('Content-Type', 'text/csv; charset=utf-8');
    res.setHeader('Content-Disposition', `attachment; filename="suppressions-${workspace.slug}-${env}.csv"`);
    res.write('address,reason,detail,message_id,created_at\r\n');
    for await (const page of deps.suppressions.each({ workspaceId: workspace.id, livemode: env === 'live' })) {
      const chunk = page.map((s) => [s.address, s.reason, s.detail, s.messageId, s.createdAt].map(csvField).join(',') + '\r\n').join('');
      if (res.destroyed) return; // the browser went away
      if (!res.write(chunk))
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done).off('close', done);
            resolve();
          };
          res.once('drain', done).once('close', done);
        });
    }
    res.end();
  });
  return r;
}
