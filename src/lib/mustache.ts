// Mustache as Postern runs it: plain text rendered verbatim, HTML escaped, JSON objects whose strings
// are templates, a bounded cache of parsed templates, and the variables a template uses that the
// given values lack (walked as Mustache's own lookup walks them). Channels render their content with
// these (their spec's `render`); templates/render.ts checks templates with `parse`.
import Mustache from 'mustache';

/** Mustache's token: type, value, start, end, children (sections), end of the section's opening. */
export type Token = [string, string, number, number, Token[]?, number?];
type Vars = Record<string, unknown>;

const verbatim = { escape: (s: unknown) => String(s) };

// Mustache caches every parsed template forever in a plain object; in a daemon that renders
// caller-supplied inline content that is a slow leak. A small LRU keeps the hot templates parsed.
const TEMPLATE_CACHE_SIZE = 2000;
function lruCache(max: number): NonNullable<typeof Mustache.templateCache> {
  const map = new Map<string, string>();
  return {
    get(key) {
      const v = map.get(key);
      if (v !== undefined) {
        map.delete(key);
        map.set(key, v);
      }
      return v;
    },
    set(key, value) {
      map.delete(key);
      map.set(key, value);
      if (map.size > max) map.delete(map.keys().next().value as string);
    },
    clear() {
      map.clear();
    },
  };
}
Mustache.templateCache = lruCache(TEMPLATE_CACHE_SIZE);

/** The tokens of a template; throws when it does not parse. */
export function parse(template: string): Token[] {
  return Mustache.parse(template) as unknown as Token[];
}

/** A plain-text field: values inserted as they are. An absent field renders empty. */
export function renderText(template: string | undefined, vars: Vars): string {
  return template ? Mustache.render(template, vars, {}, verbatim) : '';
}

/** An HTML field: values HTML-escaped (`{{{triple}}}` inserts them raw). */
export function renderHtml(template: string, vars: Vars): string {
  return Mustache.render(template, vars, {});
}

/** A JSON object whose strings, at any depth, are plain-text templates. */
export function renderData(data: Record<string, unknown> | undefined, vars: Vars): Record<string, unknown> {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return Mustache.render(v, vars, {}, verbatim);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return (walk(data ?? {}) as Record<string, unknown>) ?? {};
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
