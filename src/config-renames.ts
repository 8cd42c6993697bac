// Settings renamed or removed in 0.2.0 (see CHANGELOG.md). Every duration became a string such as
// `5m` under a name without its unit, and a plan's limits moved into one `plans.<plan>` tree. An
// old name still works for this release, from a config file or its POSTERN_* variable: its value is
// converted to the new setting, and a warning names the new key. A setting that no longer exists is
// ignored with a warning. The next release drops this file.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface Rename {
  from: string[];
  to: string[];
  /** The old value in the new setting's form. */
  convert(v: Json): Json;
  /** The old default, so the old environment variable is parsed as its type. */
  like: Json;
  /** How to write the new value, for the warning. */
  hint: string;
}

const PLANS = ['free', 'starter', 'pro', 'custom'];

const asDuration =
  (factorMs: number) =>
  (v: Json): Json =>
    typeof v === 'number' && Number.isFinite(v) ? `${Math.round(v * factorMs)}ms` : v;
const unit = (from: string, to: string, factorMs: number, like: number): Rename => ({
  from: from.split('.'),
  to: to.split('.'),
  convert: asDuration(factorMs),
  like,
  hint: 'a duration such as 500ms, 30s, 5m, 2h or 5d',
});

const RENAMES: Rename[] = [
  unit('smtp.socketTimeoutMs', 'smtp.socketTimeout', 1, 60000),
  unit('smtp.maxConnectionMs', 'smtp.maxConnectionTime', 1, 600000),
  unit('smtp.greetingDelayMs', 'smtp.greetingDelay', 1, 100),
  unit('dns.timeoutMs', 'dns.timeout', 1, 3000),
  unit('auth.cacheTtlMs', 'auth.cacheTtl', 1, 1000),
  unit('webhooks.timeoutMs', 'webhooks.timeout', 1, 10000),
  unit('webhooks.leaseMs', 'webhooks.lease', 1, 60000),
  unit('webhooks.pollIntervalMs', 'webhooks.pollInterval', 1, 1000),
  unit('webhooks.fanoutDelayMs', 'webhooks.fanoutDelay', 1, 10),
  unit('forwarding.pollIntervalMs', 'forwarding.pollInterval', 1, 1000),
  unit('dispatcher.intervalMs', 'dispatcher.interval', 1, 1000),
  unit('dispatcher.commitWindowMs', 'dispatcher.commitWindow', 1, 10),
  unit('dispatcher.leaseSeconds', 'dispatcher.lease', 1000, 300),
  unit('channels.timeoutMs', 'channels.timeout', 1, 15000),
  unit('delivery.idleTimeoutMs', 'delivery.idleTimeout', 1, 10000),
  unit('delivery.timeoutMs', 'delivery.timeout', 1, 60000),
  unit('tail.pingSeconds', 'tail.ping', 1000, 15),
  unit('tail.maxMinutes', 'tail.maxDuration', 60_000, 30),
  unit('retry.maxAgeHours', 'retry.maxAge', 3_600_000, 120),
  unit('inbound.retentionDays', 'inbound.retention', 86_400_000, 30),
  ...PLANS.map((plan) => ({
    from: ['inbound', 'monthlyQuota', plan],
    to: ['plans', plan, 'inboundPerMonth'],
    convert: (v: Json) => v,
    like: 0,
    hint: 'a number of messages per month (0: unlimited)',
  })),
  ...PLANS.flatMap((plan) =>
    ['shared', 'domain'].flatMap((tier) =>
      ['day', 'month'].map((period) => ({
        from: ['senderCaps', 'plans', plan, tier, period],
        to: ['plans', plan, 'senderCaps', tier, period],
        convert: (v: Json) => v,
        like: 0,
        hint: 'a number (-1: unlimited, 0: none)',
      })),
    ),
  ),
];

const REMOVED: { path: string[]; why: string }[] = [
  { path: ['inbound', 'storeWorker'], why: 'the store-worker mode was removed (it measured slower than storing on the event loop)' },
];

export type EnvName = (keyPath: string[]) => string;

function get(obj: JsonObject, p: string[]): Json | undefined {
  let cur: Json | undefined = obj;
  for (const k of p) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

function set(obj: JsonObject, p: string[], value: Json): void {
  let cur = obj;
  for (const k of p.slice(0, -1)) {
    const next = cur[k];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) cur[k] = {};
    cur = cur[k] as JsonObject;
  }
  cur[p[p.length - 1]] = value;
}

// Deletes the setting, and the objects on its path that held nothing else.
function remove(obj: JsonObject, p: string[]): void {
  for (let depth = p.length; depth > 0; depth--) {
    const parent = get(obj, p.slice(0, depth - 1));
    if (!parent || typeof parent !== 'object' || Array.isArray(parent)) return;
    const key = p[depth - 1];
    const v = parent[key];
    const emptied = depth === p.length || (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0);
    if (!emptied) return;
    delete parent[key];
  }
}

const clone = (v: JsonObject): JsonObject => JSON.parse(JSON.stringify(v)) as JsonObject;

/**
 * A config layer (a file, code overrides) with every old setting moved to its new name (unless the
 * layer also gives the new one, which wins) and every removed one dropped, each with a warning.
 */
export function renameSettings(layer: JsonObject, envName: EnvName, warn: (message: string) => void): JsonObject {
  const out = clone(layer);
  for (const r of RENAMES) {
    const old = get(out, r.from);
    if (old === undefined) continue;
    remove(out, r.from);
    if (get(out, r.to) === undefined) set(out, r.to, r.convert(old));
    warn(deprecation(r, envName));
  }
  for (const r of REMOVED) {
    if (get(out, r.path) === undefined) continue;
    remove(out, r.path);
    warn(`setting ${r.path.join('.')} (${envName(r.path)}) is ignored: ${r.why}`);
  }
  return out;
}

/** The old environment variables that are set, as a config layer under their new names. */
export function renamedFromEnv(
  env: NodeJS.ProcessEnv,
  envName: EnvName,
  parse: (name: string, raw: string, like: Json) => Json,
  warn: (message: string) => void,
): JsonObject {
  const out: JsonObject = {};
  for (const r of RENAMES) {
    const name = envName(r.from);
    const raw = env[name];
    if (raw === undefined) continue;
    // The whole map at once (POSTERN_INBOUND_MONTHLY_QUOTA='{"free": 100, …}').
    set(out, r.to, r.convert(parse(name, raw, r.like)));
    warn(deprecation(r, envName));
  }
  const quota = env[envName(['inbound', 'monthlyQuota'])];
  if (quota !== undefined) {
    const map = parse(envName(['inbound', 'monthlyQuota']), quota, {}) as JsonObject;
    for (const [plan, v] of Object.entries(map)) set(out, ['plans', plan, 'inboundPerMonth'], v);
    warn(
      `setting inbound.monthlyQuota (${envName(['inbound', 'monthlyQuota'])}) is deprecated and works until the next release: use plans.<plan>.inboundPerMonth (POSTERN_PLANS_<PLAN>_INBOUND_PER_MONTH)`,
    );
  }
  const caps = env[envName(['senderCaps', 'plans'])];
  if (caps !== undefined) {
    const map = parse(envName(['senderCaps', 'plans']), caps, {}) as JsonObject;
    for (const [plan, v] of Object.entries(map)) set(out, ['plans', plan, 'senderCaps'], v);
    warn(
      `setting senderCaps.plans (${envName(['senderCaps', 'plans'])}) is deprecated and works until the next release: use plans.<plan>.senderCaps (POSTERN_PLANS_<PLAN>_SENDER_CAPS_…)`,
    );
  }
  for (const r of REMOVED) {
    if (env[envName(r.path)] !== undefined) warn(`setting ${r.path.join('.')} (${envName(r.path)}) is ignored: ${r.why}`);
  }
  return out;
}

/** The POSTERN_* variables of the settings above, which are still read (so they are not unknown). */
export function deprecatedEnvNames(envName: EnvName): string[] {
  return [
    ...RENAMES.map((r) => envName(r.from)),
    envName(['inbound', 'monthlyQuota']),
    envName(['senderCaps', 'plans']),
    ...REMOVED.map((r) => envName(r.path)),
  ];
}

/** `retry.schedule` in seconds (numbers, the old form) becomes durations. */
export function renameRetrySchedule(merged: JsonObject, warn: (message: string) => void): void {
  const schedule = get(merged, ['retry', 'schedule']);
  if (!Array.isArray(schedule) || !schedule.some((v) => typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v)))) return;
  set(
    merged,
    ['retry', 'schedule'],
    schedule.map((v) => (typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v)) ? `${Number(v)}s` : v)),
  );
  warn(
    'setting retry.schedule (POSTERN_RETRY_SCHEDULE) in seconds is deprecated and works until the next release: write durations such as 1m, 5m, 4h',
  );
}

function deprecation(r: Rename, envName: EnvName): string {
  return `setting ${r.from.join('.')} (${envName(r.from)}) is deprecated and works until the next release: use ${r.to.join('.')} (${envName(r.to)}), ${r.hint}`;
}
