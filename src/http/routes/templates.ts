// Templates over HTTP. Reads and render need scope read; the draft operations (create, save draft,
// publish, discard, list versions, and the description/status update) need scope send. The router
// only parses and translates: every rule lives in templates/store.ts.
import { Router, type Request } from 'express';
import { notFound } from '../../lib/errors.js';
import { createTemplateBody, draftBody, renderBody, updateTemplateBody } from '../../contract/template-schemas.js';
import { normalizeSlug, type TemplateStore } from '../../templates/index.js';
import { parseBody } from '../../lib/validation.js';
import { principalOf, requireScope } from '../auth.js';

/** The slug of the path; a string that cannot be a slug names no template (404). */
function slugOf(req: Request): string {
  const raw = String(req.params.slug);
  const slug = normalizeSlug(raw);
  if (!slug) throw notFound(`template ${raw}`);
  return slug;
}

export function templateRoutes(templates: TemplateStore): Router {
  const r = Router();
  const ws = (res: Parameters<typeof principalOf>[0]) => principalOf(res).workspace;

  r.get('/templates', requireScope('read'), async (_req, res) => {
    res.json({ data: await templates.list(ws(res).id) });
  });

  r.post('/templates', requireScope('send'), async (req, res) => {
    const body = parseBody(createTemplateBody, req.body);
    res.status(201).json(await templates.create(ws(res), body));
  });

  r.get('/templates/:slug', requireScope('read'), async (req, res) => {
    res.json(await templates.get(ws(res).id, slugOf(req)));
  });

  r.patch('/templates/:slug', requireScope('send'), async (req, res) => {
    const slug = slugOf(req);
    const body = parseBody(updateTemplateBody, req.body);
    res.json(await templates.update(ws(res).id, slug, body));
  });

  r.post('/templates/:slug/render', requireScope('read'), async (req, res) => {
    const slug = slugOf(req);
    const body = parseBody(renderBody, req.body);
    res.json(await templates.render(ws(res).id, slug, body));
  });

  r.put('/templates/:slug/draft', requireScope('send'), async (req, res) => {
    const slug = slugOf(req);
    const body = parseBody(draftBody, req.body);
    res.json(await templates.saveDraft(ws(res).id, slug, body));
  });

  r.delete('/templates/:slug/draft', requireScope('send'), async (req, res) => {
    const slug = slugOf(req);
    await templates.discardDraft(ws(res).id, slug);
    res.json({ deleted: true });
  });

  r.post('/templates/:slug/publish', requireScope('send'), async (req, res) => {
    res.json(await templates.publish(ws(res).id, slugOf(req)));
  });

  r.get('/templates/:slug/versions', requireScope('send'), async (req, res) => {
    res.json({ data: await templates.versions(ws(res).id, slugOf(req)) });
  });

  return r;
}
