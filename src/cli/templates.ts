// `postern template …`: push template files (JSON, with optional sibling .html/.txt) and list a
// workspace's templates. File reading lives here; what a push does lives in push.ts.
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import path from 'node:path';
import type { Command } from './command.js';
import { required, UsageError } from './command.js';
import { invalidBody } from '../lib/errors.js';
import { pushTemplates, type TemplateFile } from '../templates/index.js';

/** The JSON files named: a file as is, a directory's *.json (not recursive), sorted by name. */
function jsonFiles(args: string[]): string[] {
  const out: string[] = [];
  for (const a of args) {
    if (!existsSync(a)) throw new UsageError(`${a}: no such file or directory`);
    if (statSync(a).isDirectory()) {
      out.push(
        ...readdirSync(a)
          .filter((n) => n.endsWith('.json'))
          .sort()
          .map((n) => path.join(a, n)),
      );
    } else {
      out.push(a);
    }
  }
  return out;
}

/**
 * Reads one template file. `content.html` / `content.text` may instead live beside it as
 * `<slug>.html` / `<slug>.txt` (or named like the JSON file); giving both is an error.
 */
function readTemplateFile(file: string): TemplateFile {
  let data: { slug?: unknown; content?: unknown } | null;
  try {
    data = JSON.parse(readFileSync(file, 'utf8')) as typeof data;
  } catch (err) {
    throw invalidBody([{ path: file, message: `not a readable JSON file: ${(err as Error).message}` }]);
  }
  if (data && typeof data === 'object' && !Array.isArray(data)) {
    const dir = path.dirname(file);
    const base = path.basename(file, '.json');
    const stems = [
      ...new Set([typeof data.slug === 'string' ? data.slug.toLowerCase() : null, base].filter((s): s is string => Boolean(s))),
    ];
    for (const [field, ext] of [
      ['html', '.html'],
      ['text', '.txt'],
    ] as const) {
      const sibling = stems.map((s) => path.join(dir, s + ext)).find((p) => existsSync(p));
      if (!sibling) continue;
      data.content ??= {};
      if (typeof data.content === 'object' && data.content !== null) {
        const content = data.content as Record<string, unknown>;
        if (content[field] !== undefined) {
          throw invalidBody([
            { path: `${file}:content.${field}`, message: `content.${field} is given both in the JSON and in ${sibling}` },
          ]);
        }
        content[field] = readFileSync(sibling, 'utf8');
      }
    }
  }
  return { file, data };
}

export const templateCommands: Command[] = [
  {
    name: 'template push',
    usage: '--workspace S [--publish] FILE|DIR…',
    summary: 'save template files as drafts (and publish them); prints what changed',
    options: { workspace: { type: 'string' }, publish: { type: 'boolean' } },
    run: async (app, { values, positionals }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      if (positionals.length === 0) throw new UsageError('name at least one template file or directory');
      const files = jsonFiles(positionals).map(readTemplateFile);
      const changes = await pushTemplates(app.templates, ws, files, { publish: values.publish === true });
      return { workspace: ws.slug, changed: changes.filter((c) => c.changed).length, templates: changes };
    },
  },
  {
    name: 'template list',
    usage: '--workspace S',
    summary: "list a workspace's templates with their current and draft versions",
    options: { workspace: { type: 'string' } },
    run: async (app, { values }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      const out = [];
      for (const s of await app.templates.list(ws.id)) {
        const d = await app.templates.get(ws.id, s.slug);
        out.push({ ...s, currentVersion: d.currentVersion?.versionNumber ?? null, draftVersion: d.draft?.versionNumber ?? null });
      }
      return out;
    },
  },
];
