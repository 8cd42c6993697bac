// smtp-server holds every new connection 100 ms before its 220 greeting (a client that talks
// before the greeting gets "421 You talk too soon": the early-talker check that catches spam bots
// that do not wait). It has no option for it, and the pause caps one sending session at about ten
// new connections a second. This makes the pause configurable (`smtp.greetingDelay`, default
// 100 = smtp-server's own) by replacing the connection's ready step with our own timer; the
// early-talker check itself is unchanged (data before the greeting is still refused), only its
// window moves. Implicit-TLS connections (`needsUpgrade`) keep smtp-server's own timing.
//
// With `clients` (inbound/passed-clients.ts) the pause is postscreen's: a client that sat through
// it and then sent a command has passed, and is greeted at once on later connections for
// `smtp.greetingPassTtl`. A client not known in memory waits its pause while the database is asked;
// when the answer is that it passed, it is greeted then.
import type { SMTPServer } from 'smtp-server';
import type { PassedClients } from '../inbound/index.js';
import { onConnection } from './internals.js';

/** smtp-server's built-in pause (node_modules/smtp-server/dist/esm/smtp-connection.js init()). */
const BUILT_IN_GREETING_DELAY_MS = 100;

export function setGreetingDelay(server: SMTPServer, delayMs: number, clients?: PassedClients | null): void {
  if (delayMs === 0) clients = null; // nothing to pass
  if (delayMs === BUILT_IN_GREETING_DELAY_MS && !clients) return;
  onConnection(server, (c) => {
    if (c.needsUpgrade) return;
    const ready = c.connectionReady.bind(c);
    // smtp-server's own 100 ms timer now finds a no-op; ours sends the greeting.
    c.connectionReady = () => {};
    let greeted = false;
    const greet = (paused: boolean) => {
      if (greeted) return;
      greeted = true;
      clearTimeout(timer);
      if (c._closing || c._closed) return;
      ready();
      if (!paused || !clients) return;
      // Its first command after the whole pause: it waited, and it speaks SMTP.
      const onCommand = c._onCommand.bind(c);
      c._onCommand = (command, callback) => {
        c._onCommand = onCommand;
        clients.pass(c.remoteAddress);
        onCommand(command, callback);
      };
    };
    const timer = setTimeout(() => greet(true), delayMs);
    timer.unref();
    if (!clients) return;
    const passed = clients.passed(c.remoteAddress);
    if (passed === true) greet(false);
    else if (passed !== false)
      passed.then(
        (yes) => yes && greet(false),
        () => {},
      );
  });
}
