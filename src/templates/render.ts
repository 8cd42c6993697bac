// Rendering: the one entry that turns a channel's content and `vars` into output, used by the
// render endpoint and by the send pipeline alike. Each channel's spec renders its own fields
// (Mustache through mustache.ts: HTML escaping only in email's `html`, every other field plain text
// rendered verbatim); here are the checks of a template and the variables it misses, which read the
// Mustache fields from the contract's hints. Partials are refused (no file access).
import { specOf } from '../channels/registry.js';
import { CHANNEL_HINTS } from '../contract/channels.js';
import type { Issue } from '../lib/errors.js';
import { parse, type Token } from './mustache.js';
import type { Channel, ChannelContent, ChannelOutput } from '../contract/channels.js';

export interface RenderResult<O extends ChannelOutput = ChannelOutput> {
  channel: Channel;
  output: O;
  /** Variable paths the content references that `vars` does not supply, in order of first use. */
  missing: string[];
}

/** The fields of each channel that are Mustache templates: its text fields and JSON objects (the contract's hints). */
const TEMPLATE_FIELDS = Object.fromEntries(
  Object.entries(CHANNEL_HINTS).map(([channel, hints]) => [channel, hints.fields.filter((f) => f.kind !== 'number').map((f) => f.key)]),
) as Record<Channel, string[]>;

type Vars = Record<string, unknown>;

/** A template problem; `position` is the character offset Mustache reports, with its line and column. */
export interface TemplateIssue extends Issue {
  position?: number;
  line?: number;
  column?: number;
}

function locate(template: string, position: number): { line: number; column: number } {
  const before = template.slice(0, position).split('\n');
  return { line: before.length, column: before[before.length - 1].length + 1 };
}

/**
 * How deep sections may nest. Rendering walks sections recursively, so a template nesting them
 * thousands deep would exhaust the stack at send time; real templates nest a handful.
 */
const MAX_SECTION_DEPTH = 100;

/**
 * Parse problems of every template field: unbalanced tags (with the position Mustache reports),
 * partials, and sections nested deeper than MAX_SECTION_DEPTH. Called when content is saved (and
 * for an inline send with `interpolate`), so a bad template never reaches send time.
 */
export function checkTemplates(channel: Channel, content: Record<string, unknown>, pathPrefix = 'content'): TemplateIssue[] {
  const issues: TemplateIssue[] = [];
  const fields = TEMPLATE_FIELDS[channel];
  const visit = (value: unknown, p: string) => {
    if (typeof value === 'string') {
      let tokens: Token[];
      try {
        tokens = parse(value);
      } catch (err) {
        const message = (err as Error).message;
        const at = / at (\d+)$/.exec(message);
        const issue: TemplateIssue = { path: p, message: `template does not parse: ${message}` };
        if (at) Object.assign(issue, { position: Number(at[1]) }, locate(value, Number(at[1])));
        issues.push(issue);
        return;
      }
      // In document order, with an explicit stack (a recursive walk is what deep nesting breaks):
      // the first partial, or the first section nested too deep.
      const stack: { list: Token[]; next: number; depth: number }[] = [{ list: tokens, next: 0, depth: 0 }];
      while (stack.length > 0) {
        const top = stack[stack.length - 1];
        if (top.next >= top.list.length) {
          stack.pop();
          continue;
        }
        const tok = top.list[top.next++];
        const problem =
          tok[0] === '>'
            ? `partials are not allowed ({{> ${tok[1]}}} at ${tok[2]})`
            : tok[4] && top.depth + 1 > MAX_SECTION_DEPTH
              ? `sections nest more than ${MAX_SECTION_DEPTH} deep ({{${tok[0]}${tok[1]}}} at ${tok[2]})`
              : null;
        if (problem) {
          issues.push({ path: p, message: problem, position: tok[2], ...locate(value, tok[2]) });
          break;
        }
        if (tok[4]) stack.push({ list: tok[4], next: 0, depth: top.depth + 1 });
      }
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => visit(v, `${p}.${i}`));
    } else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) visit(v, `${p}.${k}`);
    }
  };
  for (const f of fields) visit(content[f], `${pathPrefix}.${f}`);
  return issues;
}

// A context frame of the walk. `transparent` frames (a section over true, a string, a number)
// add no names of their own, so a name not found anywhere is reported against the frame below.
interface Frame {
  value: unknown;
  prefix: string;
  transparent?: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object';

// Resolves a name the way Mustache's Context.lookup does: innermost frame first, a dotted name hits
// only when its last segment exists; reports the path the name would have had when none has it.
function resolveName(stack: Frame[], name: string): { found: boolean; value: unknown; path: string } {
  if (name === '.') return { found: true, value: stack[stack.length - 1].value, path: stack[stack.length - 1].prefix || '.' };
  const parts = name.split('.');
  for (let i = stack.length - 1; i >= 0; i--) {
    let cur: unknown = stack[i].value;
    let hit = false;
    for (let j = 0; j < parts.length && cur !== null && cur !== undefined; j++) {
      if (j === parts.length - 1) hit = isObject(cur) && parts[j] in cur;
      cur = isObject(cur) ? cur[parts[j]] : undefined;
    }
    if (hit) {
      const path = stack[i].prefix ? `${stack[i].prefix}.${name}` : name;
      return { found: cur !== undefined, value: cur, path };
    }
  }
  let k = stack.length - 1;
  while (k > 0 && stack[k].transparent) k--;
  const inner = stack[k].prefix;
  return { found: false, value: undefined, path: inner ? `${inner}.${name}` : name };
}

// How many list items a section's names are checked against; enough for real lists, bounded for huge ones.
const MAX_ITEMS_CHECKED = 100;

function collectMissing(tokens: Token[], stack: Frame[], out: Set<string>): void {
  for (const tok of tokens) {
    const [type, name] = tok;
    if (type === 'name' || type === '&' || type === '{') {
      const r = resolveName(stack, name);
      if (!r.found) out.add(r.path);
    } else if (type === '#' || type === '^') {
      const r = resolveName(stack, name);
      const children = tok[4] ?? [];
      if (!r.found) {
        // Not supplied: report it, and the names used inside it, as paths under it.
        out.add(r.path);
        collectMissing(children, type === '#' ? [...stack, { value: {}, prefix: r.path }] : stack, out);
        continue;
      }
      const falsy = !r.value || (Array.isArray(r.value) && r.value.length === 0);
      if (type === '^') {
        // The block renders only when the value is falsy; otherwise nothing inside is used.
        if (falsy) collectMissing(children, stack, out);
        continue;
      }
      if (falsy) continue;
      const items = Array.isArray(r.value) ? r.value.slice(0, MAX_ITEMS_CHECKED) : [r.value];
      for (const item of items) {
        const frame: Frame = isObject(item) ? { value: item, prefix: r.path } : { value: item, prefix: r.path, transparent: true };
        collectMissing(children, [...stack, frame], out);
      }
    }
  }
}

/** Every variable path the templates reference that `vars` does not supply, in order of first use. */
export function missingVariables(templates: string[], vars: Vars): string[] {
  const out = new Set<string>();
  for (const t of templates) collectMissing(parse(t), [{ value: vars, prefix: '' }], out);
  return [...out];
}

function templateStrings(channel: Channel, content: Record<string, unknown>): string[] {
  const out: string[] = [];
  const visit = (v: unknown) => {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === 'object') Object.values(v).forEach(visit);
  };
  for (const f of TEMPLATE_FIELDS[channel]) visit(content[f]);
  return out;
}

/** Renders content of a channel with `vars`. The content must have passed checkTemplates(). */
export function renderContent(channel: Channel, content: ChannelContent, vars: Vars = {}): RenderResult {
  const missing = missingVariables(templateStrings(channel, content as unknown as Record<string, unknown>), vars);
  const output = specOf(channel).render(content, vars);
  return { channel, output, missing };
}

/** Content used verbatim (a raw send without `interpolate`): the same output shape, no Mustache. */
export function contentAsOutput(channel: Channel, content: ChannelContent): ChannelOutput {
  return specOf(channel).verbatim(content);
}

/** A stored message's content to render, as plain data (it may cross to a delivery thread). */
export interface RenderRequest {
  channel: Channel;
  /** The stored content (JSON text of the channel's content). */
  content: string;
  /** The stored vars (JSON text) to run Mustache with; null uses the content verbatim (raw sends). */
  vars: string | null;
}

/** The rendered output of a stored message's content. Throws when the content cannot be rendered. */
export function renderOutput(req: RenderRequest): ChannelOutput {
  const content = JSON.parse(req.content) as ChannelContent;
  return req.vars === null ? contentAsOutput(req.channel, content) : renderContent(req.channel, content, JSON.parse(req.vars)).output;
}
