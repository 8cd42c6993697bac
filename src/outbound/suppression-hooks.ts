// The dispatcher's suppression hooks: before a message goes out, is its recipient on the list of
// its environment (suppressed, or opted out of template sends); after a permanent failure that asks
// for it, add the recipient. The key a recipient is listed under is its channel's (the spec's
// `suppression`), so this is where the suppression list and the channels meet.
import { specOf } from '../channels/index.js';
import type { Channel } from '../contract/channels.js';
import { readsTogether } from '../db/index.js';
import { type ListScope, normalizeAddress, type Suppression, type SuppressionStore } from '../suppressions/index.js';

/**
 * The dispatcher's suppression check for a message: `suppressed` for a suppressed recipient,
 * `opted_out` for an unsubscribed one on a template send; null to go ahead.
 */
export function createSuppressionCheck(store: SuppressionStore, opts: { together?: boolean } = {}) {
  // On PostgreSQL the checks of messages dispatched side by side share one statement (db/reads-together.ts).
  const together = opts.together
    ? readsTogether<ListScope, string, Suppression>(
        (scope, keys) => store.getMany(scope, keys),
        (scope) => `${scope.workspaceId} ${scope.livemode}`,
      )
    : null;
  const lookup = async (scope: ListScope, key: string) => {
    const address = normalizeAddress(key);
    return (together ? await together(scope, address) : (await store.getMany(scope, [address])).get(address)) ?? null;
  };
  return async (message: {
    workspaceId: string;
    livemode: boolean;
    channel: Channel;
    recipient: string;
    templateSlug: string | null;
  }): Promise<{ kind: 'suppressed' | 'opted_out'; reason: string } | null> => {
    const s = await lookup(
      { workspaceId: message.workspaceId, livemode: message.livemode },
      specOf(message.channel).suppression.key(message.recipient),
    );
    if (!s) return null;
    if (s.reason === 'unsubscribe') {
      return message.templateSlug ? { kind: 'opted_out', reason: `${s.address} unsubscribed on ${s.createdAt}` } : null;
    }
    return { kind: 'suppressed', reason: `${s.address} is on the suppression list (${s.reason}${s.detail ? `: ${s.detail}` : ''})` };
  };
}

/** The dispatcher's hook for permanent failures that ask for suppression (any channel). */
export function createSuppressHook(store: SuppressionStore) {
  return async (
    message: { workspaceId: string; livemode: boolean; channel: Channel; recipient: string; publicId: string },
    detail: string,
  ): Promise<void> => {
    const suppression = specOf(message.channel).suppression;
    await store.add(
      { workspaceId: message.workspaceId, livemode: message.livemode },
      {
        address: suppression.key(message.recipient),
        reason: suppression.reason,
        detail,
        messageId: message.publicId,
      },
    );
  };
}
