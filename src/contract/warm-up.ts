// The Warm-up page's answer (GET /dashboard/api/warm-up, owners only): the box's source addresses,
// who is assigned which pool, and each (source, sending domain) schedule of warm-up. Part of the
// contract (src/contract/): the daemon builds it (http/dashboard/warm-up.ts, channels/email/warm-up.ts),
// the dashboard reads it (ui/src/pages/warm-up.tsx). Types only.

export interface ScheduleView {
  source: string;
  sendingDomain: string;
  /** Index in the curve; equal to `steps` once warm. */
  step: number;
  steps: number;
  /** The UTC day the numbers are for. */
  day: string;
  /** Today's allowance; null once warm (no limit). */
  allowance: number | null;
  used: number;
  /** The allowance of the next step and the day it applies from; null once warm or while paused. */
  next: { day: string; allowance: number | null } | null;
  pausedReason: string | null;
  pausedAt: string | null;
  startedAt: string;
  /** The pair's answers over the window that decides a pause. */
  recent: { delivered: number; bounced: number; deferred: number; complained: number; windowHours: number };
}

/** A source address as the Warm-up page shows it. */
export interface WarmUpSource {
  name: string;
  address: string;
  ehlo: string;
  /** The pools the source is a member of. */
  pools: string[];
  warmingUp: boolean;
}

export interface WarmUpView {
  enabled: boolean;
  /** Each step's daily allowance. */
  curve: number[];
  sources: WarmUpSource[];
  assignment: { default: string; workspaces: Record<string, string>; domains: Record<string, string> };
  addressFamily: Record<string, 'ipv4' | 'ipv6'>;
  data: ScheduleView[];
}
