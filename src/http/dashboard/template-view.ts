// A template's rendered email HTML, served alone for the editor's sandboxed preview iframe. The
// dashboard page's CSP forbids inline styles and a srcdoc frame would inherit it, so the preview is
// its own document with its own CSP: no scripts, inline styles, and remote images only once the
// operator asks (?remote=1), the same rule as received mail (isolated-html.ts imageSourcesAsked).
// It renders through the same store as POST /v1/templates/{slug}/render.
import { Router } from 'express';
import { CHANNEL_HINTS } from '../../contract/channels.js';
import { invalidRequest } from '../../lib/errors.js';
import { nestsDeeperThan, paramTooDeep } from '../../lib/json-depth.js';
import { normalizeSlug } from '../../templates/index.js';
import { actingOn, type DashboardDeps } from './context.js';
import { imageSourcesAsked, sendIsolatedHtml } from './isolated-html.js';

function parseVars(v: unknown): Record<string, unknown> {
  if (v === undefined || v === '') return {};
  if (typeof v !== 'string') throw invalidRequest('vars must be given once, as JSON');
  if (nestsDeeperThan(v)) throw paramTooDeep('vars');
  try {
    const vars: unknown = JSON.parse(v);
    if (vars && typeof vars === 'object' && !Array.isArray(vars)) return vars as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw invalidRequest('vars must be a JSON object');
}

export function templateViewRoutes(deps: DashboardDeps): Router {
  const r = Router();
  // ?version=N (a draft included) and ?vars={json}; without version, the current published one;
  // ?remote=1 loads remote images.
  r.get('/templates/:slug', async (req, res) => {
    const { workspace } = await actingOn(deps, res);
    const version = req.query.version === undefined ? undefined : Number(req.query.version);
    if (version !== undefined && !(Number.isInteger(version) && version >= 1)) throw invalidRequest('version must be an integer from 1');
    const result = await deps.templates.render(workspace.id, normalizeSlug(String(req.params.slug)) ?? '', {
      vars: parseVars(req.query.vars),
      version,
    });
    const html = CHANNEL_HINTS[result.channel].mime ? (result.output as { html: string }).html : '';
    sendIsolatedHtml(res, html || '<p>(No HTML part: the text version is shown beside.)</p>', imageSourcesAsked(req.query));
  });
  return r;
}
