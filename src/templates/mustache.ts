// Mustache as Postern runs it: every field plain text rendered verbatim, except what a channel
// renders as HTML (escaped), and a bounded cache of parsed templates. Channels render their content
// with these (their spec's `render`); render.ts checks and walks templates with `parse`.
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
