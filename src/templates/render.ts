// A template's content with sample variables, as the render endpoint answers it (the output and
// the variables it misses), and the checks of a template before it is saved (or an inline send
// with `interpolate` is accepted): every Mustache field (the contract's hints name them) must
// parse, use no partials (no file access) and nest sections at most MAX_SECTION_DEPTH deep. Each
// channel's spec renders the output; delivery renders through channels/render.ts, which asks the
// same spec and leaves out what is missing.
import { specOf } from '../channels/index.js';
import { CHANNEL_HINTS, type Channel, type ChannelContent, type ChannelOutput } from '../contract/channels.js';
import type { Issue } from '../lib/errors.js';
import { missingVariables, parse, type Token } from '../lib/mustache.js';

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
