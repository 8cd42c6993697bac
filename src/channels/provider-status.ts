// Applies a verified provider status report (Twilio's status callback, the HTTP gateway's callback)
// to the message it is about, found by connection and providerMessageId. Only what the transition
// table allows a callback to do is applied (sent → delivered, sent | delivered → failed); a late
// or repeated report changes nothing. The change, its timeline entries and its event are written
// by the message ledger.
import type { Ledger } from '../messages/index.js';
import type { StatusReport } from './provider.js';

export interface ProviderStatusUpdate extends StatusReport {
  connectionId: string;
  provider: string;
}

export interface ProviderStatusSink {
  /** Applies the report to the matching message; false when none matches (or it is already final). */
  apply(update: ProviderStatusUpdate): Promise<boolean>;
}

export function createProviderStatusSink(ledger: Ledger): ProviderStatusSink {
  return {
    async apply(update) {
      const done = await ledger.update(
        (trx) =>
          trx
            .selectFrom('messages')
            .selectAll()
            .where('provider_connection_id', '=', update.connectionId)
            .where('provider_message_id', '=', update.providerMessageId)
            .executeTakeFirst(),
        (row) => {
          const change = ledger.change(row);
          if (!change.can(update.status, 'provider-callback')) return null;
          change.note(`${update.provider} callback: ${update.status}`);
          change.step(update.status, 'provider-callback');
          return change.set({ error: update.error ?? row.error });
        },
      );
      return done?.written != null;
    },
  };
}
