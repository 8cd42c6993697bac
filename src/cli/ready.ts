// `postern ready [--wait 60s] [--url URL]`: asks the daemon's GET /readyz until it answers ready or
// the wait runs out. systemd runs it as the unit's ExecStartPost, so `systemctl start postern`
// returns (and units ordered after Postern start) only once the database answers, the listeners
// are up and the migrations are current; a daemon that never gets there fails the start.
import { WILDCARDS } from '../public-url.js';
import { parseDuration } from '../lib/duration.js';
import type { Config } from '../config.js';
import { CommandFailure, UsageError, type SetupCommand } from './command.js';

/** The address a client on this machine reaches the configured HTTP listener at. */
function localHttpUrl(config: Config): string {
  if (config.http.port === 0) throw new CommandFailure('http.port is 0 (any free port): name the daemon with --url');
  const host = config.http.host.replace(/^\[|\]$/g, '');
  // A wildcard listener answers on loopback too: the one of its address family.
  const local = WILDCARDS.has(host) ? (host.includes(':') ? '::1' : '127.0.0.1') : host;
  return `http://${local.includes(':') ? `[${local}]` : local}:${config.http.port}`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const readyCommands: SetupCommand[] = [
  {
    name: 'ready',
    usage: '[--wait 60s] [--url http://127.0.0.1:8025]',
    summary: "wait until the running daemon's /readyz says it can serve (exit 0), or say why not (exit 1)",
    options: { wait: { type: 'string' }, url: { type: 'string' } },
    run: async (config, io, { values }) => {
      let waitMs: number;
      try {
        waitMs = parseDuration(typeof values.wait === 'string' ? values.wait : '0s');
      } catch {
        throw new UsageError('--wait must be a duration such as 30s or 2m');
      }
      const base = typeof values.url === 'string' ? values.url.replace(/\/+$/, '') : localHttpUrl(config);
      if (!/^https?:\/\/[^/]+$/.test(base)) throw new UsageError("--url must be the daemon's address, such as http://127.0.0.1:8025");
      const deadline = Date.now() + waitMs;
      let why = '';
      for (;;) {
        // A timer of our own bounds each attempt: AbortSignal.timeout's does not keep the process
        // alive, and a listener that accepts and hangs up left fetch with nothing else to wait on,
        // so the command ended with exit code 13 and no word.
        const attempt = new AbortController();
        const bound = setTimeout(() => attempt.abort(new Error('no answer within 2 s')), 2_000);
        try {
          const res = await fetch(`${base}/readyz`, { signal: attempt.signal });
          const body = (await res.json().catch(() => null)) as { ready?: boolean; reasons?: string[] } | null;
          if (res.status === 200 && body?.ready === true) {
            io.out(JSON.stringify(body) + '\n');
            return 0;
          }
          why = body?.reasons?.length ? body.reasons.join('; ') : `GET /readyz answered ${res.status}`;
        } catch (err) {
          why = `no answer from ${base} (${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message})`;
        } finally {
          clearTimeout(bound);
        }
        if (Date.now() >= deadline) break;
        await sleep(Math.min(250, Math.max(0, deadline - Date.now())));
      }
      throw new CommandFailure(`not ready${waitMs > 0 ? ` after ${values.wait as string}` : ''}: ${why}`, 1);
    },
  },
];
