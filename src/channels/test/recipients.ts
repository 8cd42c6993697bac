// Test-mode recipients that simulate outcomes. Test keys never contact anything; these documented
// recipients let a caller exercise every path of the pipeline (see docs/api/sending.md):
//   email     local part (before any +tag, any domain): failed, bounce, suppressed, blocked,
//             deferred, opted_out (or optedout), sent — e.g. failed@example.com, deferred+1@x.test
//   sms       +15005550001 failed, …0002 suppressed, …0003 blocked, …0004 deferred, …0005 opted_out,
//             …0006 sent
//   push      tokens test-failed, test-suppressed, test-blocked, test-deferred, test-opted_out, test-sent
//   web-push  a subscription whose endpoint's last path segment is one of those words
//             (https://push.example/failed)
// Anything else is delivered. `deferred` is deferred on the first attempt and delivered on the next.
import type { Channel } from '../../channel.js';

export type Simulation = 'failed' | 'suppressed' | 'blocked' | 'deferred' | 'opted_out' | 'sent';

const WORDS: Record<string, Simulation> = {
  failed: 'failed',
  bounce: 'failed',
  suppressed: 'suppressed',
  blocked: 'blocked',
  deferred: 'deferred',
  opted_out: 'opted_out',
  optedout: 'opted_out',
  'opted-out': 'opted_out',
  sent: 'sent',
};

const PHONES: Record<string, Simulation> = {
  '+15005550001': 'failed',
  '+15005550002': 'suppressed',
  '+15005550003': 'blocked',
  '+15005550004': 'deferred',
  '+15005550005': 'opted_out',
  '+15005550006': 'sent',
};

/** The outcome a test-mode recipient asks for, or null for a plain delivery. */
export function simulationFor(channel: Channel, recipient: string): Simulation | null {
  switch (channel) {
    case 'email': {
      const local = recipient.slice(0, recipient.lastIndexOf('@')).split('+')[0].toLowerCase();
      return WORDS[local] ?? null;
    }
    case 'sms':
      return PHONES[recipient] ?? null;
    case 'push':
      return recipient.startsWith('test-') ? (WORDS[recipient.slice(5).toLowerCase()] ?? null) : null;
    case 'web-push': {
      try {
        const endpoint = new URL((JSON.parse(recipient) as { endpoint: string }).endpoint);
        const last = endpoint.pathname.split('/').filter(Boolean).pop() ?? '';
        return WORDS[last.toLowerCase()] ?? null;
      } catch {
        return null;
      }
    }
  }
}
