// A message's content rendered through its channel's spec, for delivery: the output a transport
// sends, on a delivery thread or the event loop. Each channel's spec renders its own fields with
// lib/mustache.ts. What a template misses of its variables is the render endpoint's question
// (templates/render.ts), not delivery's, so this module loads neither it nor the contract's schemas:
// a delivery thread starts with what it needs.
import type { Channel, ChannelContent, ChannelOutput } from '../contract/channels.js';
import { specOf } from './registry.js';

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
  return req.vars === null ? contentAsOutput(req.channel, content) : specOf(req.channel).render(content, JSON.parse(req.vars));
}
