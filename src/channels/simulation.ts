// Test-mode recipients that simulate outcomes. Test keys never contact anything; documented
// recipients let a caller exercise every path of the pipeline (see docs/api/sending.md). Each
// channel's spec says how its recipients name an outcome (spec.ts `simulation`); the words are
// shared: failed (or bounce), suppressed, blocked, deferred, opted_out (or optedout, opted-out), sent.
// Anything else is delivered. `deferred` is deferred on the first attempt and delivered on the next.

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

/** The outcome a word (any case) names, or null. */
export function simulationWord(word: string): Simulation | null {
  return Object.hasOwn(WORDS, word.toLowerCase()) ? WORDS[word.toLowerCase()] : null;
}
