// A session that used STARTTLS lets go of its socket when it ends. smtp-server's upgrade strips
// every listener of the raw socket (removeAllListeners), and the listeners' own `close` handlers
// (which clear the connection-lifetime timer and forget the socket kept for shutdown) were among
// them: each STARTTLS session left a timer for `smtp.maxConnectionTime` and its socket for good.
import net from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import tls from 'node:tls';
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { starttls } from '../helpers/starttls.js';
import { until } from '../helpers/until.js';

const SESSIONS = 30;

/** STARTTLS, the handshake and QUIT; resolves when the connection has closed. */
async function starttlsSession(port: number): Promise<void> {
  const plain = await starttls(port);
  return new Promise((resolve, reject) => {
    const secure = tls.connect({ socket: plain, rejectUnauthorized: false });
    secure.on('error', reject);
    secure.once('secureConnect', () => secure.end('QUIT\r\n'));
    secure.resume();
    secure.once('close', () => resolve());
  });
}

// The server's sockets are watched for collection: one still referenced (by a timer, by the set kept
// for shutdown) after its session ended is one the daemon holds for nothing.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

for (const db of testDatabases())
  for (const listener of ['smtp', 'submission'] as const)
    t.test(`STARTTLS sessions on the ${listener} listener leave no socket behind (${db})`, async (t) => {
      const daemon = await bootDaemon(t, { db, env: { POSTERN_SMTP_GREETING_DELAY: '0ms', POSTERN_SUBMISSION_ENABLED: 'true' } });
      const port = listener === 'smtp' ? daemon.smtpPort : daemon.submissionPort!;
      let collected = 0;
      const registry = new FinalizationRegistry(() => (collected += 1));
      type Emit = (this: net.Server, event: string | symbol, ...args: unknown[]) => boolean;
      const emit = net.Server.prototype.emit as Emit;
      net.Server.prototype.emit = function (this: net.Server, event: string | symbol, ...args: unknown[]) {
        const at = (this.address() as net.AddressInfo | null)?.port;
        if (event === 'connection' && at === port) registry.register(args[0] as object, null);
        return emit.call(this, event, ...args);
      } as typeof net.Server.prototype.emit;
      t.teardown(() => void (net.Server.prototype.emit = emit));
      for (let i = 0; i < SESSIONS; i++) await starttlsSession(port);
      const freed = await until('the sockets of the closed sessions to be collected', async () => {
        gc();
        await new Promise((r) => setImmediate(r));
        return collected >= SESSIONS - 2 ? collected : false;
      }).catch(() => collected);
      t.ok(freed >= SESSIONS - 2, `${freed} of ${SESSIONS} sockets collected after their STARTTLS sessions closed`);
    });
