// The dispatcher's pure CPU work, as jobs that take and return plain data, so that they run the
// same on a render thread (render-worker.ts) or on the event loop: rendering a message's content
// (Mustache; the text part derived from html) and building its MIME message (MailComposer) with
// its DKIM signature. Nothing here touches the database, the clock or the network.
import type { Channel, ChannelContent, ChannelOutput } from '../templates/render.js';
import { contentAsOutput, renderContent } from '../templates/render.js';
import { composeMessage, type ComposeInput } from './channels/email/compose.js';
import { signMessage, type SigningKey } from './channels/email/dkim.js';

export interface RenderRequest {
  channel: Channel;
  /** The stored content (JSON text of the channel's content). */
  content: string;
  /** The stored vars (JSON text) to run Mustache with; null uses the content verbatim (raw sends). */
  vars: string | null;
}

export interface ComposeRequest {
  input: ComposeInput;
  /** Signs the message when set. */
  key: SigningKey | null;
}

export type RenderJob = { kind: 'render'; req: RenderRequest } | { kind: 'compose'; req: ComposeRequest };

/** The rendered output of a message's content. Throws when the content cannot be rendered. */
export function renderOutput(req: RenderRequest): ChannelOutput {
  const content = JSON.parse(req.content) as ChannelContent;
  return req.vars === null ? contentAsOutput(req.channel, content) : renderContent(req.channel, content, JSON.parse(req.vars)).output;
}

/** The complete RFC 5322 message, DKIM-signed when a key is given. */
export async function composeSigned(req: ComposeRequest): Promise<Buffer> {
  const raw = await composeMessage(req.input);
  return req.key ? signMessage(raw, req.key) : raw;
}

export function runRenderJob(job: RenderJob): Promise<ChannelOutput | Buffer> {
  return job.kind === 'render' ? Promise.resolve().then(() => renderOutput(job.req)) : composeSigned(job.req);
}
