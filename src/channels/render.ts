// A message's content rendered through its channel's spec: the one entry that turns content and
// `vars` into output, used by the render endpoint and by the send pipeline alike (on a delivery
// thread or the event loop). Each channel's spec renders its own fields with lib/mustache.ts; the
// fields that are templates come from the contract's hints.
import type { Channel, ChannelContent, ChannelOutput } from '../contract/channels.js';
import { CHANNEL_HINTS } from '../contract/channels.js';
import { missingVariables } from '../lib/mustache.js';
import { specOf } from './registry.js';

export interface RenderResult<O extends ChannelOutput = ChannelOutput> {
  channel: Channel;
  output: O;
  /** Variable paths the content references that `vars` does not supply, in order of first use. */
  missing: string[];
}

/** The fields of each channel that are Mustache templates: its text fields and JSON objects (the contract's hints). */
export const TEMPLATE_FIELDS = Object.fromEntries(
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
