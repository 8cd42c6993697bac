// What a channel is, in one place: each channel folder exports one ChannelSpec (its spec.ts) and
// the registry (registry.ts) lists them. Everything that differs between channels outside the
// transport's own code is here — how a recipient is written, how content renders, what a test
// recipient simulates, what a suppression lists — so the layers that serve every channel
// (templates, outbound, suppressions, metrics) ask the spec instead of switching on the name. The
// content's schemas and the dashboard's hints are the contract's (src/contract/channels.ts), which
// the dashboard and the SDK read too. A spec is plain functions and data: it never imports its
// folder's transport, so any layer may load it.
import type { Provider } from './provider.js';
import type { Simulation } from './simulation.js';
import type { Channel, ChannelContent, ChannelOutput } from '../contract/channels.js';

/** The variables a message renders with. */
export type Vars = Record<string, unknown>;

export interface ChannelSpec<C extends ChannelContent = ChannelContent, O extends ChannelOutput = ChannelOutput> {
  channel: Channel;
  /** What is wrong with a recipient (a send's `to`), or null when it is one of this channel's. */
  recipientIssue(to: string): string | null;
  /** Whether a send may carry the envelope fields (from, fromName, cc, bcc, replyTo, attachments). */
  envelope: boolean;
  /** Content rendered with a message's variables (Mustache); throws when it cannot be rendered. */
  render(content: C, vars: Vars): O;
  /** Content used verbatim (a raw send without `interpolate`): the same output, no Mustache. */
  verbatim(content: C): O;
  /** The outcome a test-mode recipient asks for (simulation.ts), or null for a plain delivery. */
  simulation(recipient: string): Simulation | null;
  /** The entry a recipient is suppressed under, and the reason a permanent failure lists it with. */
  suppression: { key(recipient: string): string; reason: 'bounce' | 'unregistered' };
  /** The destination a recipient is counted under in the metrics, or null when the channel has none. */
  destination(recipient: string): string | null;
  /**
   * How live messages go out: built from the config by the composition root (email), or through
   * the provider connection a workspace chose, naming one of `providers`.
   */
  live: { kind: 'config' } | { kind: 'connection'; providers: readonly Provider[] };
}

/** A channel's spec, its functions typed with its own content and output, as the registry lists it. */
export const channelSpec = <C extends ChannelContent, O extends ChannelOutput>(spec: ChannelSpec<C, O>): ChannelSpec => spec;

/** The recipient as is: the key of channels whose recipient is already what identifies it. */
export const asIs = (recipient: string) => recipient;
