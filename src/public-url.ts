// The public URL: links in mail, attachment URLs and provider callbacks are made with it. Kept out
// of the composition root (app.ts) so what needs only this rule (the CLI's `ready`, its tests) does
// not load the whole daemon.
import type { Config } from './config.js';

// Listening on every address names no host a link could use.
export const WILDCARDS: ReadonlySet<string> = new Set(['0.0.0.0', '::', '::0', '0:0:0:0:0:0:0:0']);

/**
 * `publicUrl`, or when it is empty the HTTP listener's own URL. A wildcard listener (0.0.0.0 in the
 * Docker image, ::) takes `hostname` instead, the name the machine answers to (`localhost` unless set).
 * With HTTPS listening (`httpsPort`), `https://hostname`, with the port unless it is 443.
 */
export function derivePublicUrl(
  config: Pick<Config, 'publicUrl' | 'hostname'> & { http: Pick<Config['http'], 'host'> },
  port: number,
  httpsPort: number | null = null,
): string {
  if (config.publicUrl) return config.publicUrl.replace(/\/$/, '');
  // With HTTPS on, plain HTTP redirects: links name the HTTPS listener, by `hostname` (its certificate's name).
  if (httpsPort !== null) return `https://${config.hostname}${httpsPort === 443 ? '' : `:${httpsPort}`}`;
  const host = WILDCARDS.has(config.http.host) ? config.hostname : config.http.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Why a derived public URL makes links that work on this machine only; null when publicUrl is set or it may work elsewhere. */
export function publicUrlWarning(config: Pick<Config, 'publicUrl'>, url: string): string | null {
  if (config.publicUrl) return null;
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  const local = host === 'localhost' || host.endsWith('.localhost') || host.startsWith('127.') || host === '::1';
  if (!local) return null;
  return (
    `publicUrl is empty, so links in mail (tracking, unsubscribe), attachment URLs and provider callbacks use ${url}, ` +
    'which only this machine can reach: set publicUrl (POSTERN_PUBLIC_URL) to the URL clients and recipients use'
  );
}
