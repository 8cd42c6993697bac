// What a provider is: everything Postern knows about one way of delivering a channel through a
// workspace's provider connection (Twilio for sms, APNs for push, …), in the provider's own file —
// its settings (which are secret, required, defaulted; the CLI derives its flags from them and the
// connection store validates against them), the transport built for one connection, and, when the
// provider reports delivery later, how its status callback is verified and what it means. The
// registry (registry.ts) lists the providers; nothing else names one.
import type { ChannelTransport } from '../channel.js';
import type { Clock } from '../lib/clock.js';
import type { DnsResolver } from '../lib/dns.js';
import type { Issue } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { SsrfPolicy } from '../lib/ssrf.js';
import type { Channel } from '../contract/channels.js';
import type { Env } from '../contract/vocabulary.js';

export interface SettingSpec {
  /** camelCase key in the stored settings; the CLI flag is its kebab-case form. */
  name: string;
  secret?: boolean;
  required?: boolean;
  default?: string;
  /** May be given as --<flag>-file PATH (PEM keys and certificates). */
  file?: boolean;
  kind?: 'url' | 'int' | 'e164-or-sender';
  describe: string;
}

/** A provider connection as anyone may see it. */
export interface Connection {
  id: string;
  workspaceId: string;
  env: Env;
  channel: Channel;
  provider: string;
  name: string;
  /** Settings that are not secret. */
  settings: Record<string, string>;
  /** Names of the secret settings that are set (values are never shown). */
  secrets: string[];
  createdAt: string;
  removedAt: string | null;
}

/** A connection with its credentials opened; for transports and callback checks only. */
export interface ResolvedConnection extends Connection {
  credentials: Record<string, string>;
}

/** What a provider transport may use besides its connection. */
export interface TransportDeps {
  clock: Clock;
  log: Logger;
  /** Base URL providers call back on (status callbacks). */
  publicUrl(): string;
  /** Per-request timeout towards a provider (`channels.timeout`). */
  timeoutMs: number;
  /** Resolves provider and push-service host names (for the SSRF guard). */
  dns: DnsResolver;
  /** Which private destinations a provider URL may reach (`channels.allowPrivate`, `channels.allowList`). */
  ssrf: SsrfPolicy;
}

/** A provider's later report about a message it accepted. */
export interface StatusReport {
  providerMessageId: string;
  status: 'sent' | 'delivered' | 'failed';
  error?: string;
  suppress?: boolean;
}

/** A status callback request as the provider made it (the HTTP adapter fills this in). */
export interface CallbackRequest {
  /** The full URL the provider called (our public URL, the path and the query). */
  url: string;
  /** The parsed form fields (`form`) or the raw text (`text`). */
  body: Record<string, string> | string;
  header(name: string): string | undefined;
  nowMs: number;
}

export interface ProviderCallback {
  /** Mounted at /callbacks/{path}/{connectionId}. */
  path: string;
  /** How the request body is read: form-encoded fields, or the raw text (signatures cover the exact bytes). */
  body: 'form' | 'text';
  /** True when the request carries the provider's valid signature for this connection. */
  verify(conn: ResolvedConnection, req: CallbackRequest): boolean;
  /** What a verified request reports; null when nothing we act on. Throws an AppError for a malformed body. */
  report(req: CallbackRequest): StatusReport | null;
}

export interface Provider {
  channel: Channel;
  /** The provider's name as connections store it (`twilio`, `apns`, …). */
  name: string;
  describe: string;
  settings: SettingSpec[];
  /** Rules across settings. */
  check?(values: Record<string, string>): Issue[];
  /** The transport of one connection (built once per connection and kept). */
  transport(conn: ResolvedConnection, deps: TransportDeps): ChannelTransport;
  callback?: ProviderCallback;
}

export const kebab = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();

/** E.164: a plus, a non-zero country digit, at most 15 digits in all. */
export function isE164(value: string): boolean {
  return /^\+[1-9]\d{6,14}$/.test(value);
}

/** Applies defaults and checks values against the provider's settings; returns the issues found. */
export function checkSettings(provider: Provider, input: Record<string, string>): { values: Record<string, string>; issues: Issue[] } {
  const issues: Issue[] = [];
  const values: Record<string, string> = {};
  const known = new Set(provider.settings.map((s) => s.name));
  for (const k of Object.keys(input)) {
    if (!known.has(k))
      issues.push({
        path: k,
        message: `${provider.name} has no setting ${kebab(k)}; settings: ${provider.settings.map((s) => kebab(s.name)).join(', ')}`,
      });
  }
  for (const s of provider.settings) {
    const v = input[s.name] ?? s.default;
    if (v === undefined || v === '') {
      if (s.required) issues.push({ path: s.name, message: `${kebab(s.name)} is required for ${provider.name}` });
      continue;
    }
    if (s.kind === 'url' && !/^https?:\/\/[^\s/]+/.test(v))
      issues.push({ path: s.name, message: `${kebab(s.name)} must be an http(s) URL` });
    if (s.kind === 'int' && !/^\d{1,9}$/.test(v)) issues.push({ path: s.name, message: `${kebab(s.name)} must be a whole number` });
    if (s.kind === 'e164-or-sender' && !isE164(v) && !/^\d{4,8}$/.test(v) && !/^(?=.*[A-Za-z])[A-Za-z0-9 ]{1,11}$/.test(v)) {
      issues.push({
        path: s.name,
        message: `${kebab(s.name)} must be an E.164 number, a short code or an alphanumeric sender id (at most 11 characters, at least one letter)`,
      });
    }
    values[s.name] = v;
  }
  // Rules across settings run whatever else failed, so every issue is listed at once (as the API
  // promises); one already reported for a setting is not repeated.
  if (provider.check) {
    const reported = new Set(issues.map((i) => i.path));
    issues.push(...provider.check(values).filter((i) => !reported.has(i.path)));
  }
  return { values, issues };
}
