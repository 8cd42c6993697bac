// Configuration: config/default.json holds every setting with its safe default; a `--config FILE`
// is merged over it, and POSTERN_* environment variables over that. The variable for a setting is
// derived from its key path (`delivery.mode` → POSTERN_DELIVERY_MODE), so adding a key to
// default.json and to the schema below is all it takes to make it configurable everywhere.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const hostPort = /^(\[[0-9a-fA-F:]+\]|[0-9.]+|[0-9a-fA-F:]+)(:\d{1,5})?$/;
const port = z.number().int().min(0).max(65535);
const duration = /^\d+(ms|s|m|h|d)$/;

const schema = z.strictObject({
  dataDir: z.string().min(1),
  databaseUrl: z.string().refine((v) => v === '' || /^(postgres|postgresql|sqlite):/.test(v) || v.startsWith('/') || v.startsWith('.'), {
    message: 'must be empty (SQLite in the data dir), postgres://…, sqlite:PATH or a file path',
  }),
  hostname: z.string().regex(/^[a-zA-Z0-9.-]+$/, 'must be a host name'),
  publicUrl: z.union([z.literal(''), z.url({ protocol: /^https?$/ })]),
  sharedInboundDomain: z.string().regex(/^[a-z0-9.-]+\.[a-z0-9-]+$|^[a-z0-9-]+$/, 'must be a lowercase domain name'),
  bounceDomain: z.union([z.literal(''), z.string().regex(/^[a-z0-9.-]+\.[a-z0-9-]+$/, 'must be a lowercase domain name')]),
  http: z.strictObject({
    host: z.string().min(1),
    port,
    bodyLimit: z.string().regex(/^\d+(b|kb|mb)$/, 'must look like 40mb'),
    trustProxy: z.boolean(),
  }),
  smtp: z.strictObject({
    host: z.string().min(1),
    port,
    maxSizeBytes: z.number().int().min(1024),
    maxClients: z.number().int().min(1),
    maxRecipients: z.number().int().min(1),
    socketTimeoutMs: z.number().int().min(1000),
    maxConnectionMs: z.number().int().min(1000),
    proxyProtocol: z.boolean(),
    reverseLookup: z.boolean(),
    tlsCert: z.string(),
    tlsKey: z.string(),
    greetingDelayMs: z.number().int().min(0).max(60_000),
  }),
  dns: z.strictObject({
    servers: z.array(z.string().regex(hostPort, 'must be ip or ip:port')),
    timeoutMs: z.number().int().min(100).max(60000),
  }),
  auth: z.strictObject({
    cacheTtlMs: z.number().int().min(0).max(60_000),
  }),
  rateLimit: z.strictObject({
    send: z.number().min(0),
    read: z.number().min(0),
  }),
  dkim: z.strictObject({
    selector: z.string().regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'must be a DNS label'),
  }),
  inbound: z.strictObject({
    maxBodyBytes: z.number().int().min(1024),
    retentionDays: z.number().int().min(1),
    purgeCron: z.string().min(1),
    monthlyQuota: z.record(z.string(), z.number().int().min(0)),
    groupCommit: z.boolean(),
    storeWorker: z.boolean(),
    analysisThreads: z.number().int().min(0).max(64),
  }),
  log: z.strictObject({
    level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  }),
  // Webhook delivery. Durations are strings such as 500ms, 5s, 5m, 2h, 5d. The default retry
  // schedule adds up to about 28 hours after the first attempt.
  webhooks: z
    .strictObject({
      allowPrivate: z.boolean(),
      allowList: z.array(z.string().min(1)),
      timeoutMs: z.number().int().min(100).max(120000),
      retrySchedule: z.array(z.string().regex(duration, 'must be a duration such as 5s, 5m, 2h')),
      disableAfter: z.string().regex(duration, 'must be a duration such as 5d'),
      concurrencyPerEndpoint: z.number().int().min(1).max(1000),
      maxInFlight: z.number().int().min(1).max(10000),
      leaseMs: z.number().int().min(200),
      pollIntervalMs: z.number().int().min(10),
      rotationOverlap: z.string().regex(duration, 'must be a duration such as 24h'),
      fanoutDelayMs: z.number().int().min(0).max(1000),
    })
    .refine((w) => w.leaseMs > w.timeoutMs, { message: 'leaseMs must exceed timeoutMs', path: ['leaseMs'] }),
  // Forwarding of received mail: the ARC seal's signing domain (empty: `hostname`) and selector,
  // and how many Received headers a message may carry before forwarding it is refused as a loop.
  forwarding: z.strictObject({
    arcDomain: z.union([z.literal(''), z.string().regex(/^[a-z0-9.-]+$/, 'must be a lowercase domain name')]),
    arcSelector: z.string().regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'must be a DNS label'),
    maxHops: z.number().int().min(1).max(200),
    pollIntervalMs: z.number().int().min(10),
  }),
  dispatcher: z.strictObject({
    concurrency: z.number().int().min(1).max(256),
    batchSize: z.number().int().min(1).max(1000),
    leaseSeconds: z.number().int().min(5).max(86400),
    intervalMs: z.number().int().min(10).max(600000),
    commitWindowMs: z.number().int().min(0).max(100),
    renderThreads: z.number().int().min(0).max(64),
  }),
  retry: z.strictObject({
    schedule: z.array(z.coerce.number().int().min(1)).min(1),
    maxAgeHours: z.number().min(0),
  }),
  plans: z.strictObject({
    free: z.strictObject({ messagesPerMonth: z.number().int().min(0) }),
    starter: z.strictObject({ messagesPerMonth: z.number().int().min(0) }),
    pro: z.strictObject({ messagesPerMonth: z.number().int().min(0) }),
    custom: z.strictObject({ messagesPerMonth: z.number().int().min(0) }),
  }),
  tail: z.strictObject({
    pingSeconds: z.number().min(0.01).max(3600),
    maxMinutes: z.number().min(0.01).max(1440),
  }),
  scanner: z.strictObject({
    blockedPhrases: z.array(z.string().min(1)),
    blockedPatterns: z.array(
      z
        .string()
        .min(1)
        .refine((p) => {
          try {
            new RegExp(p, 'i');
            return true;
          } catch {
            return false;
          }
        }, 'must be a valid regular expression'),
    ),
    blockedDomains: z.array(z.string().min(1)),
  }),
  // Key that encrypts provider credentials at rest: 32 bytes as base64 or hex; empty means
  // generated into {dataDir}/secrets.key on first start.
  secrets: z.strictObject({
    key: z.string().refine((v) => v === '' || /^[0-9a-fA-F]{64}$/.test(v) || Buffer.from(v, 'base64').length === 32, {
      message: 'must be empty or 32 bytes as base64 or 64 hex characters',
    }),
  }),
  channels: z.strictObject({
    timeoutMs: z.number().int().min(100).max(300000),
  }),
  // --- email delivery (README: Email delivery) ---
  delivery: z.strictObject({
    mode: z.enum(['direct', 'relay']),
    relayUrl: z.union([z.literal(''), z.string().regex(/^smtps?:\/\//, 'must be smtp://… or smtps://…')]),
    port,
    tls: z.enum(['opportunistic', 'verify', 'require', 'none']),
    maxConnections: z.number().int().min(1).max(10000),
    maxConnectionsPerHost: z.number().int().min(1).max(1000),
    messagesPerConnection: z.number().int().min(1).max(100000),
    idleTimeoutMs: z.number().int().min(100).max(600000),
    timeoutMs: z.number().int().min(100).max(600000),
    domainRates: z.record(z.string(), z.string().regex(/^\d+\/(s|sec|min|h|hour|d|day)$/, 'must look like 60/min')),
    from: z.strictObject({ address: z.union([z.literal(''), z.email()]), name: z.string().max(128) }),
  }),
  tracking: z.strictObject({
    enabledByDefault: z.boolean(),
    secret: z.string(),
  }),
  senderCaps: z.strictObject({
    enabled: z.boolean(),
    plans: z.record(
      z.string(),
      z.strictObject({
        shared: z.strictObject({ day: z.number().int().min(-1), month: z.number().int().min(-1) }),
        domain: z.strictObject({ day: z.number().int().min(-1), month: z.number().int().min(-1) }),
      }),
    ),
  }),
});

export type Config = z.infer<typeof schema>;

/** A setting that cannot be used; `postern serve` exits with code 2 on it. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const defaultsPath = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'config', 'default.json');

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** The environment variable that overrides a key path. */
export function envName(keyPath: string[]): string {
  return 'POSTERN_' + keyPath.map((k) => k.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_');
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function merge(base: JsonObject, over: JsonObject): JsonObject {
  const out: JsonObject = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] = isObject(b) && isObject(v) ? merge(b, v) : v;
  }
  return out;
}

// An environment value takes the type of the default it overrides: numbers and booleans are parsed,
// arrays are comma lists, objects (maps such as per-domain limits) are JSON.
function parseEnvValue(name: string, raw: string, like: Json): Json {
  if (typeof like === 'number') {
    const n = Number(raw);
    if (raw.trim() === '' || Number.isNaN(n)) throw new ConfigError(`invalid setting ${name}=${JSON.stringify(raw)}: must be a number`);
    return n;
  }
  if (typeof like === 'boolean') {
    if (/^(true|1|yes|on)$/i.test(raw)) return true;
    if (/^(false|0|no|off)$/i.test(raw)) return false;
    throw new ConfigError(`invalid setting ${name}=${JSON.stringify(raw)}: must be true or false`);
  }
  if (Array.isArray(like)) {
    return raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  }
  if (isObject(like)) {
    try {
      const v = JSON.parse(raw) as Json;
      if (!isObject(v)) throw new Error('not an object');
      return v;
    } catch {
      throw new ConfigError(`invalid setting ${name}: must be a JSON object`);
    }
  }
  return raw;
}

function applyEnv(defaults: JsonObject, target: JsonObject, env: NodeJS.ProcessEnv, prefix: string[] = []): JsonObject {
  const out: JsonObject = { ...target };
  for (const [k, like] of Object.entries(defaults)) {
    const keyPath = [...prefix, k];
    const name = envName(keyPath);
    const raw = env[name];
    if (raw !== undefined) {
      out[k] = parseEnvValue(name, raw, like);
    } else if (isObject(like) && Object.keys(like).length > 0 && isObject(out[k])) {
      out[k] = applyEnv(like, out[k] as JsonObject, env, keyPath);
    }
  }
  return out;
}

function readJson(file: string): JsonObject {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`);
  }
  try {
    const v = JSON.parse(text) as Json;
    if (!isObject(v)) throw new Error('the top level must be an object');
    return v;
  } catch (err) {
    throw new ConfigError(`config file ${file} is not valid JSON: ${(err as Error).message}`);
  }
}

export interface LoadConfigOptions {
  env?: NodeJS.ProcessEnv;
  file?: string;
  /** Values merged last, for tests that build a config in code. */
  overrides?: Record<string, unknown>;
}

/** Builds the one typed Config from default.json, an optional file, the environment and overrides. */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const defaults = readJson(defaultsPath);
  let merged = defaults;
  const file = options.file ?? options.env?.POSTERN_CONFIG;
  if (file) merged = merge(merged, readJson(file));
  merged = applyEnv(defaults, merged, options.env ?? {});
  if (options.overrides) merged = merge(merged, options.overrides as JsonObject);
  const result = schema.safeParse(merged);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const keyPath = issue.path.map(String);
      const where = keyPath.length ? `${keyPath.join('.')} (${envName(keyPath.filter((p) => !/^\d+$/.test(p)))})` : 'config';
      return `invalid setting ${where}: ${issue.message}`;
    });
    throw new ConfigError(problems.join('; '));
  }
  return result.data;
}

/** The SQLite file or PostgreSQL URL the config selects. */
export function databaseTarget(config: Config): { dialect: 'sqlite'; file: string } | { dialect: 'postgres'; url: string } {
  const url = config.databaseUrl;
  if (/^postgres(ql)?:/.test(url)) return { dialect: 'postgres', url };
  if (url.startsWith('sqlite:')) return { dialect: 'sqlite', file: path.resolve(url.slice('sqlite:'.length)) };
  if (url !== '') return { dialect: 'sqlite', file: path.resolve(url) };
  return { dialect: 'sqlite', file: path.resolve(config.dataDir, 'postern.sqlite') };
}
