// Boots a whole Postern daemon in this process on ephemeral ports, with a temp data dir, a
// controllable clock and the real migrations, and talks to it as a client would.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createApp, type App } from '../../src/app.js';
import { main } from '../../src/cli.js';
import { loadConfig } from '../../src/config.js';
import { ManualClock } from './clock.js';
import { freshPostgres, type TestDb } from './databases.js';
import { startDnsServer } from './dns-server.js';
import { logLines } from './log-lines.js';
import { daemonContract } from './openapi-contract.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

export interface Response<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface TestDaemon {
  app: App;
  clock: ManualClock;
  url: string;
  httpPort: number;
  smtpPort: number;
  /** The metrics listener's port (null when the test disabled it). */
  metricsPort: number | null;
  /** The submission listeners' ports (null unless POSTERN_SUBMISSION_ENABLED; tls null when its port is 0). */
  submissionPort: number | null;
  submissionTlsPort: number | null;
  dataDir: string;
  /** Environment that points a CLI or a second daemon at the same data. */
  env: Record<string, string>;
  /** Every log line the daemon wrote, parsed. */
  logs: string[];
  cli(...args: string[]): Promise<CliResult>;
  request<T = any>(
    method: string,
    path: string,
    opts?: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<Response<T>>;
  /** Creates a workspace through the CLI with one key per env; returns the secrets. */
  workspace(slug: string, opts?: { plan?: string; scopes?: string }): Promise<{ id: string; slug: string; live: string; test: string }>;
  stop(): Promise<void>;
}

export interface BootOptions {
  db?: TestDb;
  env?: Record<string, string>;
  clock?: ManualClock;
  /** Directory to reuse (a restart after a crash). */
  dataDir?: string;
  databaseUrl?: string;
}

export async function bootDaemon(t: Teardown, opts: BootOptions = {}): Promise<TestDaemon> {
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(tmpdir(), 'postern-test-'));
  let databaseUrl = opts.databaseUrl ?? '';
  let dropDb: (() => Promise<void>) | null = null;
  if (!databaseUrl && opts.db === 'postgres') {
    const fresh = await freshPostgres();
    databaseUrl = fresh.url;
    dropDb = fresh.drop;
  }
  // Every lookup the daemon makes stays on loopback: without a zone of the test's own, an empty
  // one answers NXDOMAIN for everything, so nothing ever asks the machine's resolver.
  let defaultDns: Awaited<ReturnType<typeof startDnsServer>> | null = null;
  if (!opts.env?.POSTERN_DNS_SERVERS) defaultDns = await startDnsServer();
  const env: Record<string, string> = {
    ...(defaultDns ? { POSTERN_DNS_SERVERS: defaultDns.address } : {}),
    POSTERN_DATA_DIR: dataDir,
    POSTERN_DATABASE_URL: databaseUrl,
    POSTERN_HTTP_PORT: '0',
    POSTERN_SMTP_PORT: '0',
    POSTERN_METRICS_PORT: '0',
    POSTERN_SUBMISSION_PORT: '0',
    POSTERN_SUBMISSION_TLS_PORT: '0',
    POSTERN_SUBMISSION_HOST: '127.0.0.1',
    POSTERN_SMTP_HOST: '127.0.0.1',
    POSTERN_HOSTNAME: 'mx.postern.test',
    POSTERN_SHARED_INBOUND_DOMAIN: 'postern.test',
    POSTERN_RATE_LIMIT_SEND: '0',
    POSTERN_RATE_LIMIT_READ: '0',
    POSTERN_LOG_LEVEL: 'debug',
    ...opts.env,
  };
  const config = loadConfig({ env });
  const clock = opts.clock ?? new ManualClock();
  const { lines: logs, log } = logLines(config.log.level);
  const app = await createApp({ config, clock, log });
  const ports = await app.start();
  const url = `http://127.0.0.1:${ports.http}`;
  let stopped = false;
  const daemon: TestDaemon = {
    app,
    clock,
    url,
    httpPort: ports.http,
    smtpPort: ports.smtp,
    metricsPort: ports.metrics,
    submissionPort: ports.submission?.port ?? null,
    submissionTlsPort: ports.submission?.tlsPort ?? null,
    dataDir,
    env,
    logs,
    async cli(...args) {
      let stdout = '';
      let stderr = '';
      const code = await main(args, { ...env, POSTERN_LOG_LEVEL: 'silent' }, { out: (s) => (stdout += s), err: (s) => (stderr += s) });
      let json: any;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      return { code, stdout, stderr, json };
    },
    async request(method, p, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.key) headers.authorization = `Bearer ${o.key}`;
      let body: string | undefined = o.rawBody;
      if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers['content-type'] ??= 'application/json';
      } else if (body !== undefined) {
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(url + p, { method, headers, body });
      const text = await res.text();
      let parsed: any = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // not JSON: keep the text
      }
      // Every answer is held against the API description (test/helpers/openapi-contract.ts).
      daemonContract().check({ method, url: p, status: res.status, contentType: res.headers.get('content-type'), body: parsed, text });
      return { status: res.status, headers: res.headers, body: parsed };
    },
    async workspace(slug, o = {}) {
      const ws = await daemon.cli(
        'workspace',
        'create',
        '--slug',
        slug,
        '--name',
        `Workspace ${slug}`,
        ...(o.plan ? ['--plan', o.plan] : []),
      );
      if (ws.code !== 0) throw new Error(`workspace create failed: ${ws.stderr}`);
      const scopes = o.scopes ? ['--scopes', o.scopes] : [];
      const live = await daemon.cli('key', 'create', '--workspace', slug, '--env', 'live', ...scopes);
      const test = await daemon.cli('key', 'create', '--workspace', slug, '--env', 'test', ...scopes);
      return { id: ws.json.id, slug, live: live.json.secret, test: test.json.secret };
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await app.stop();
    },
  };
  t.teardown(async () => {
    await daemon.stop();
    if (defaultDns) await defaultDns.close();
    if (dropDb) await dropDb();
    if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
  return daemon;
}

/**
 * What a delivery test does with one key: sends plain email through `POST /v1/send-raw` (the
 * message's public id back), reads a message's view, and runs the daemon's dispatcher by hand.
 */
export function plainEmail(d: TestDaemon, key: string) {
  return {
    dispatcher: d.app.workers.find((w) => w.name === 'dispatcher')!,
    get: async (id: string) => (await d.request('GET', `/v1/messages/${id}`, { key })).body,
    send: async (to: string) =>
      (await d.request('POST', '/v1/send-raw', { key, body: { to, channel: 'email', content: { subject: 'Hi', text: 'Hello' } } })).body
        .id as string,
  };
}
