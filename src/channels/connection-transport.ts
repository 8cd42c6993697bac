// Live delivery through provider connections. For each connection channel one router transport is
// registered with the dispatcher; per message it finds the workspace's connection for that channel
// and environment and hands the delivery to the transport its provider builds for that connection
// (cached by connection id: connections never change, only get removed, and the APNs session and
// FCM token live on the cached transport). The outcome always names the connection it went through.
import type { ChannelTransport, Delivery, DeliveryOutcome } from '../channel.js';
import type { ConnectionStore } from './connections.js';
import type { ResolvedConnection, TransportDeps } from './provider.js';
import { providerFor } from './registry.js';
import type { Channel } from '../contract/channels.js';

/** Builds the provider transport for one connection. */
export function transportFor(conn: ResolvedConnection, deps: TransportDeps): ChannelTransport {
  const provider = providerFor(conn.channel, conn.provider);
  if (!provider) throw new Error(`no transport for ${conn.channel}/${conn.provider}`);
  return provider.transport(conn, deps);
}

export interface ConnectionTransports {
  /** The transport to register for a channel: it routes each message to its workspace's connection. */
  router(channel: Channel): ChannelTransport;
  close(): Promise<void>;
}

export function createConnectionTransports(connections: ConnectionStore, deps: TransportDeps): ConnectionTransports {
  const cache = new Map<string, ChannelTransport>();
  return {
    router(channel) {
      return {
        name: `${channel}-connections`,
        async deliver(delivery: Delivery): Promise<DeliveryOutcome> {
          const { message } = delivery;
          // Test mode never reaches a provider; the test channel completes those messages.
          if (!message.livemode)
            return { kind: 'failed', provider: 'none', error: 'test messages are never sent through a provider connection' };
          const conn = await connections.active(message.workspaceId, true, channel);
          if (!conn)
            return {
              kind: 'failed',
              provider: 'none',
              error: `no transport is configured for the ${channel} channel: the workspace has no live ${channel} provider connection (postern connection add)`,
            };
          let transport = cache.get(conn.id);
          if (!transport) {
            try {
              transport = transportFor(conn, deps);
            } catch (err) {
              // A stored key that no longer parses: a configuration error, not worth retrying.
              return {
                kind: 'failed',
                provider: conn.provider,
                providerConnectionId: conn.id,
                error: `connection unusable: ${(err as Error).message.slice(0, 200)}`,
              };
            }
            cache.set(conn.id, transport);
          }
          const outcome = await transport.deliver(delivery);
          return { ...outcome, providerConnectionId: conn.id };
        },
      };
    },
    async close() {
      const all = [...cache.values()];
      cache.clear();
      await Promise.all(all.map((t) => t.close?.() ?? Promise.resolve()));
    },
  };
}
