// `template push`: make stored templates match template files, so an operator can keep templates
// in git. The file is the source of truth for content and variables: pushing makes the file's
// content the latest version (a draft when it differs from the current published one), and with
// `publish` the current published version. Pushing the same files again changes nothing: content
// equal to the draft or to the current published version opens no new version.
import { z } from 'zod';
import { invalidBody, isAppError, type Issue } from '../lib/errors.js';
import { channelSchema, contentSchemas } from '../contract/channels.js';
import { descriptionSchema, slugSchema, variablesSchema, type Variable } from '../contract/template-content.js';
import { checkTemplates } from './render.js';
import type { TemplateStore } from './store.js';
import type { Channel, ChannelContent } from '../contract/channels.js';

/** One template file as read from disk, html/text siblings already merged into `content`. */
export interface TemplateFile {
  file: string;
  data: unknown;
}

export interface PushChange {
  file: string;
  slug: string;
  /** What was done, in order: created, description updated, draft saved, draft discarded, published. */
  actions: string[];
  changed: boolean;
  /** The version the file's content is now (draft or published). */
  versionNumber: number | null;
  status: 'draft' | 'published' | null;
}

const fileSchema = z.strictObject({
  slug: slugSchema,
  channel: channelSchema,
  description: descriptionSchema.optional(),
  variables: variablesSchema,
  content: z.record(z.string(), z.unknown(), { message: 'content must be an object' }),
});

interface Planned {
  file: string;
  slug: string;
  channel: Channel;
  description?: string;
  variables: Variable[];
  content: ChannelContent;
}

/** JSON with sorted keys, so two equal values compare equal whatever their key order. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** Validates every file before anything is written: one bad file stops the whole push. */
function planPush(files: TemplateFile[]): Planned[] {
  const issues: Issue[] = [];
  const planned: Planned[] = [];
  const seen = new Map<string, string>();
  for (const f of files) {
    const parsed = fileSchema.safeParse(f.data);
    if (!parsed.success) {
      issues.push(...parsed.error.issues.map((i) => ({ path: [f.file, ...i.path.map(String)].join(':'), message: i.message })));
      continue;
    }
    const { slug, channel, content } = parsed.data;
    const c = contentSchemas[channel].safeParse(content);
    if (!c.success) {
      issues.push(
        ...c.error.issues.map((i) => ({ path: `${f.file}:${['content', ...i.path.map(String)].join('.')}`, message: i.message })),
      );
      continue;
    }
    const bad = checkTemplates(channel, c.data as unknown as Record<string, unknown>);
    if (bad.length) {
      issues.push(...bad.map((i) => ({ ...i, path: `${f.file}:${i.path}` })));
      continue;
    }
    if (seen.has(slug)) issues.push({ path: `${f.file}:slug`, message: `slug ${slug} is also pushed by ${seen.get(slug)}` });
    seen.set(slug, f.file);
    planned.push({ file: f.file, slug, channel, description: parsed.data.description, variables: parsed.data.variables, content: c.data });
  }
  if (issues.length) throw invalidBody(issues);
  return planned;
}

/** Applies planned files to a workspace's templates; returns what changed per file. */
export async function pushTemplates(
  templates: TemplateStore,
  workspace: { id: string; plan: string },
  files: TemplateFile[],
  opts: { publish: boolean },
): Promise<PushChange[]> {
  const planned = planPush(files);
  const changes: PushChange[] = [];
  for (const p of planned) {
    const actions: string[] = [];
    let detail;
    try {
      detail = await templates.get(workspace.id, p.slug);
    } catch (err) {
      if (!isAppError(err) || err.code !== 'not_found') throw err;
      detail = await templates.create(workspace, { slug: p.slug, channel: p.channel, description: p.description });
      actions.push('created');
    }
    if (detail.channel !== p.channel) {
      throw invalidBody([
        {
          path: `${p.file}:channel`,
          message: `template ${p.slug} is a ${detail.channel} template; its channel cannot change to ${p.channel}`,
        },
      ]);
    }
    if (p.description !== undefined && p.description !== detail.description) {
      await templates.update(workspace.id, p.slug, { description: p.description });
      actions.push('description updated');
    }

    const wanted = canonicalJson({ content: p.content, variables: p.variables });
    const current = detail.currentVersion
      ? canonicalJson({ content: detail.currentVersion.content, variables: detail.currentVersion.variables })
      : null;
    const versions = detail.draft ? await templates.versions(workspace.id, p.slug) : [];
    const draft = versions.find((v) => v.status === 'draft');
    let versionNumber = detail.currentVersion?.versionNumber ?? null;
    let status: PushChange['status'] = versionNumber === null ? null : 'published';

    if (draft && canonicalJson({ content: draft.content, variables: draft.variables }) === wanted) {
      versionNumber = draft.versionNumber;
      status = 'draft';
    } else if (current === wanted) {
      // The file is the current published version: a differing draft no longer matches the file.
      if (draft) {
        await templates.discardDraft(workspace.id, p.slug);
        actions.push(`draft v${draft.versionNumber} discarded`);
      }
    } else {
      const v = await templates.saveDraft(workspace.id, p.slug, { content: p.content, variables: p.variables });
      versionNumber = v.versionNumber;
      status = 'draft';
      actions.push(`draft v${v.versionNumber} saved`);
    }
    if (opts.publish && status === 'draft') {
      const v = await templates.publish(workspace.id, p.slug);
      status = 'published';
      actions.push(`v${v.versionNumber} published`);
    }
    changes.push({ file: p.file, slug: p.slug, actions, changed: actions.length > 0, versionNumber, status });
  }
  return changes;
}
