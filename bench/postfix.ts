// A throwaway Postfix beside Postern in a benchmark, so that the ratio is one command: the private
// Postfix of test/helpers/postfix.ts (its own configuration, queue and log under a temporary
// directory, smtpd on a free loopback port), with every message relayed to Postfix's own
// `smtp-sink` on another (the method in docs/performance.md#postfix-beside-postern). Postfix
// fsyncs each queue file before its 250 and verifies nothing. Started only when Postfix is
// installed and the bench runs as root (Postfix's daemons drop to the `postfix` user);
// BENCH_POSTFIX=0 leaves it out. With `sasl`, smtpd is a submission server (STARTTLS, then AUTH
// against Cyrus SASL's sasldb, relaying only for the authenticated: test/helpers/postfix.ts), which
// needs saslpasswd2 (sasl2-bin) besides.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { postfixUnavailable, startPostfix as startPrivatePostfix } from '../test/helpers/postfix.js';
import { freePort } from '../test/helpers/ports.js';

const SINK = '/usr/sbin/smtp-sink';

export interface Postfix {
  /** smtpd's port on 127.0.0.1. */
  port: number;
  version: string;
  /** With `sasl`: what the client gives in AUTH PLAIN. */
  auth: { user: string; pass: string } | null;
  /**
   * CPU seconds used so far by Postfix's processes: the live ones (user postfix, the sink excepted)
   * and the master with the children it has reaped, so that a difference over a run also counts the
   * processes that exited during it.
   */
  cpuSeconds(): number;
  /** Resolves once the queue is empty (every accepted message relayed to the sink), or after `timeoutMs`. */
  drained(timeoutMs?: number): Promise<boolean>;
  stop(): Promise<void>;
}

/**
 * Starts the throwaway Postfix, or says why it cannot run here. It relays to its own `smtp-sink`,
 * or to `relayPort` on 127.0.0.1 when given (the outbound bench's sink, so both MTAs' deliveries
 * are counted by one clock).
 */
export async function startPostfix(opts: { relayPort?: number; sasl?: boolean } = {}): Promise<Postfix | { unavailable: string }> {
  if (process.env.BENCH_POSTFIX === '0') return { unavailable: 'BENCH_POSTFIX=0' };
  const why = postfixUnavailable({ sasl: opts.sasl }) ?? (existsSync(SINK) ? null : 'postfix is not installed (apt-get install postfix)');
  if (why) return { unavailable: why };
  const sinkPort = opts.relayPort ?? (await freePort());
  const sink: ChildProcess | null = opts.relayPort
    ? null
    : spawn(SINK, ['-u', 'postfix', '-c', `127.0.0.1:${sinkPort}`, '1000'], { stdio: 'ignore' });
  const postfixUid = Number(readFileSync('/etc/passwd', 'utf8').match(/^postfix:[^:]*:(\d+):/m)?.[1]);
  let postfix: Awaited<ReturnType<typeof startPrivatePostfix>>;
  try {
    postfix = await startPrivatePostfix({
      relayPort: sinkPort,
      prefix: 'postern-bench-postfix-',
      // Room for 100 client sessions besides the queue's own processes.
      settings: ['default_process_limit = 300'],
      sasl: opts.sasl ? { user: 'bench', password: 'bench-secret' } : undefined,
    });
  } catch (err) {
    sink?.kill();
    return { unavailable: (err as Error).message.replace(/\n/g, ' | ') };
  }
  return {
    port: postfix.port,
    version: postfix.version,
    auth: postfix.auth,
    cpuSeconds() {
      const master = statFields(postfix.masterPid());
      // Fields 14-17 of /proc/PID/stat: utime, stime, cutime, cstime, in clock ticks (100 per second).
      let ticks = master ? master[11] + master[12] + master[13] + master[14] : NaN;
      for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
        if (Number(pid) === sink?.pid || ownerOf(pid) !== postfixUid) continue;
        const f = statFields(Number(pid));
        if (f) ticks += f[11] + f[12];
      }
      return ticks / 100;
    },
    async drained(timeoutMs = 120_000) {
      const until = Date.now() + timeoutMs;
      while (Date.now() < until) {
        if (postfix.queued() === 0) return true;
        await new Promise((r) => setTimeout(r, 200));
      }
      return false;
    },
    async stop() {
      await postfix.stop();
      // Awaited, so that a bench that exits right after leaves no sink behind, not even a zombie.
      if (sink && sink.exitCode === null && sink.signalCode === null) {
        const exited = new Promise((resolve) => sink.once('exit', resolve));
        sink.kill();
        await exited;
      }
    },
  };
}

/** The fields of /proc/PID/stat after the command name (field 3 first), or null when it is gone. */
function statFields(pid: number): number[] | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ').map(Number);
  } catch {
    return null;
  }
}

function ownerOf(pid: string): number | null {
  try {
    return statSync(`/proc/${pid}`).uid;
  } catch {
    return null;
  }
}
