// The dashboard overview's answer (GET /dashboard/api/overview): message figures per window and per
// day, the queue, inbound volume, failing endpoints, quotas and warnings. Part of the contract
// (src/contract/): the daemon builds it (workspaces/overview.ts, messages/stats.ts), the dashboard
// reads it (ui/src/pages/overview.tsx). Types only.
import type { Env } from './vocabulary.js';

export interface WindowFigures {
  /** Messages accepted in the window. */
  accepted: number;
  /** Handed to a relay or provider that accepted them (no delivery confirmation yet). */
  sent: number;
  delivered: number;
  /** Still dispatched: waiting for a retry after a deferral (or in flight). */
  deferred: number;
  failed: number;
  /** Addresses suppressed in the window after a hard bounce (the environment's suppressions). */
  bounced: number;
  /** Addresses suppressed in the window after a spam complaint (the environment's). */
  complained: number;
  optedOut: number;
  suppressed: number;
  blocked: number;
  canceled: number;
  /** failed / (delivered + sent + failed); null with nothing finished. */
  bounceRate: number | null;
}

export interface DayFigures {
  /** YYYY-MM-DD (UTC). */
  day: string;
  delivered: number;
  sent: number;
  failed: number;
  /** Every other status (queued, deferred, suppressed, opted out, blocked, canceled, …). */
  other: number;
}

export interface QueueFigures {
  scheduled: number;
  queued: number;
  rendered: number;
  /** Dispatched and waiting for the next attempt after a deferral. */
  deferred: number;
  /** Dispatched and in a worker's hands right now. */
  inFlight: number;
  /** due_at of the oldest message whose time has come and that no worker holds; null when none. */
  oldestReadyAt: string | null;
  oldestReadyAgeSeconds: number | null;
}

export interface Meter {
  used: number;
  /** null: unlimited. */
  limit: number | null;
}

export interface Warning {
  kind: 'unverified_domain' | 'failed_domain' | 'dns_mismatch' | 'bounce_rate' | 'certificate' | 'dkim_rotation';
  message: string;
}

/** The body of GET /dashboard/api/overview (documented in src/http/dashboard/overview.ts). */
export interface Overview {
  generatedAt: string;
  workspace: { id: string; slug: string; name: string; plan: string };
  env: Env;
  windows: { '24h': WindowFigures; '7d': WindowFigures };
  daily: DayFigures[];
  queue: QueueFigures;
  inbound: { '24h': number; '7d': number };
  webhooks: { failing: { id: string; url: string; failingSince: string | null; disabled: boolean; disabledReason: string | null }[] };
  quota: {
    messages: Meter | null;
    inbound: Meter | null;
    /** Direct live email only; empty when sender caps are off, in relay mode or in test mode. */
    senderCaps: ({ tier: 'shared' | 'domain'; period: 'day' | 'month' } & Meter)[];
  };
  warnings: Warning[];
}
