// docs/try-it.md, run as written: its five fenced commands, in order, in one bash (their shell
// variables carry from one to the next, as in a reader's terminal), from the repository's root,
// with the page's own variables for the ports (POSTERN_HTTP_PORT, POSTERN_SMTP_PORT,
// POSTERN_METRICS_PORT, SINK_PORT) set to free ones and TMPDIR to this test's directory, so
// `mktemp -d` makes the page's `$T` here. The daemon's DNS (POSTERN_DNS_SERVERS) is a loopback zone
// so the checks on received mail ask nothing of the network. Each step's outcome is checked on
// what the command printed, and where the page says "a moment later", on the state it waits for,
// asked again until a bound. A page edited so its commands no longer work fails here.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { databaseEnv, testDatabases } from '../helpers/databases.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { freePort } from '../helpers/ports.js';
import { readBootstrapKeys } from '../helpers/run-bin.js';
import { until } from '../helpers/until.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PAGE = path.join(ROOT, 'docs', 'try-it.md');

/** The page's fenced `sh` blocks, each one command (lines continued with `\` or `&&`). */
function pageCommands(): string[] {
  return [...readFileSync(PAGE, 'utf8').matchAll(/^```sh\n([^]*?)^```$/gm)].map((m) => m[1].trim());
}

interface Shell {
  /** Runs one command in the shell; resolves with its exit status and what it printed on stdout. */
  run(command: string): Promise<{ status: number; out: string }>;
  stderr(): string;
  /** SIGTERM to the shell and everything it started (its own process group), and waits for them. */
  stop(): Promise<void>;
}

/** One bash reading commands, as a terminal's: state (variables, jobs) carries from one to the next. */
function startShell(env: Record<string, string>, scratch: string): Shell {
  const bash = spawn('bash', [], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  let out = '';
  let err = '';
  const waiters: (() => void)[] = [];
  bash.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    for (const w of waiters.splice(0)) w();
  });
  bash.stderr.on('data', (d: Buffer) => (err += d.toString()));
  let n = 0;
  return {
    async run(command) {
      // Sourced from a file, with stdin from /dev/null: the command is the page's text byte for
      // byte, and nothing in it can read the commands that follow from bash's stdin.
      const file = path.join(scratch, `command-${++n}.sh`);
      writeFileSync(file, command + '\n');
      const marker = `__try_it_done_${n}`;
      const start = out.length;
      // The marker on a line of its own: curl's answers end without a newline.
      bash.stdin.write(`. '${file}' </dev/null; printf '\\n%s %s\\n' ${marker} $?\n`);
      const done = new RegExp(`^${marker} (\\d+)$`, 'm');
      for (;;) {
        const m = done.exec(out.slice(start));
        if (m) return { status: Number(m[1]), out: out.slice(start, start + m.index) };
        if (bash.exitCode !== null) throw new Error(`bash exited (${bash.exitCode}): ${err}`);
        await new Promise<void>((r) => waiters.push(r));
      }
    },
    stderr: () => err,
    async stop() {
      const group = -bash.pid!;
      try {
        process.kill(group, 'SIGTERM');
      } catch {
        return;
      }
      await until('the page’s processes to stop', () => {
        try {
          process.kill(group, 0);
          return false;
        } catch {
          return true;
        }
      });
    },
  };
}

const connects = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });

t.test('the page is five commands', async (t) => {
  const commands = pageCommands();
  t.equal(commands.length, 5, 'five fenced sh blocks');
});

for (const db of testDatabases()) {
  t.test(`docs/try-it.md, command by command (${db})`, async (t) => {
    const commands = pageCommands();
    const dir = t.testdir({ tmp: {}, scratch: {} });
    const tmp = path.join(dir, 'tmp');
    const dns = await startDnsServer();
    t.teardown(() => dns.close());
    const ports = { http: await freePort(), smtp: await freePort(), metrics: await freePort(), sink: await freePort() };
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([k, v]) => !k.startsWith('POSTERN_') && v !== undefined));
    const shell = startShell(
      {
        ...(inherited as Record<string, string>),
        ...(await databaseEnv(t, db)),
        PATH: `${process.env.PATH ?? ''}:/usr/sbin:/sbin`,
        TMPDIR: tmp,
        POSTERN_HTTP_PORT: String(ports.http),
        POSTERN_SMTP_PORT: String(ports.smtp),
        POSTERN_METRICS_PORT: String(ports.metrics),
        SINK_PORT: String(ports.sink),
        POSTERN_DNS_SERVERS: dns.address,
        // npm (behind npx) would ask the registry whether it is current: nothing leaves loopback.
        npm_config_update_notifier: 'false',
      },
      path.join(dir, 'scratch'),
    );
    t.teardown(() => shell.stop());
    const step = async (i: number) => {
      const r = await shell.run(commands[i]);
      t.equal(r.status, 0, `command ${i + 1} exits 0`, { stderr: shell.stderr().slice(-2000) });
      return r.out;
    };

    // 1. The sink listens, and $T is this test's.
    await step(0);
    await until('the sink to listen', () => connects(ports.sink));
    const scratch = readdirSync(tmp);
    t.equal(scratch.length, 1, 'mktemp made $T in TMPDIR');
    const T = path.join(tmp, scratch[0]);

    // 2. Postern is ready, and says so.
    t.match(JSON.parse((await step(1)).trim()), { ready: true, checks: { http: true, smtp: true } });

    // 3. A live send is queued…
    const sent = JSON.parse((await step(2)).trim());
    t.match(sent, { id: /^msg_/, status: 'queued', livemode: true });
    // …and "a moment later" the relay (the sink) has said 250 for it.
    const { live } = readBootstrapKeys(path.join(T, 'data'));
    const api = `http://127.0.0.1:${ports.http}`;
    await until('the message to reach the sink', async () => {
      const res = await fetch(`${api}/v1/messages/${sent.id}`, { headers: { authorization: `Bearer ${live}` } });
      const body = (await res.json()) as { status?: string };
      if (body.status === 'failed') throw new Error(`delivery failed: ${JSON.stringify(body)}`);
      return body.status === 'sent';
    });

    // 4. The sink kept it, as the relay received it.
    const kept = await step(3);
    t.match(kept, /^Subject: Hello$/m);
    t.match(kept, /^To: ann@example\.com$/m);
    t.match(kept, /It works\./);

    // 5. The address on the shared domain, the mail swaks sent to it stored before the 250, and read back.
    const received = await step(4);
    // curl's answer has no newline of its own: swaks' transcript follows it on the same line.
    const address = received.slice(0, received.indexOf('=== Trying'));
    t.match(JSON.parse(address), { id: /^inb_/, address: 'hello@default.in.try.test', active: true, livemode: true });
    const stored = /^<-\s+250 2\.0\.0 Ok: stored as (rcv_\w+)$/m.exec(received)?.[1];
    t.ok(stored, 'swaks was answered 250 with the id it was stored as');
    const messages = JSON.parse(received.trim().split('\n').at(-1)!) as { messages: unknown[] };
    t.match(messages, { messages: [{ id: stored, status: 'received', from: 'you@try.test', subject: 'Hi Postern' }] });
    t.equal(messages.messages.length, 1);
  });
}
