// smtp-server holds every new connection 100 ms before its 220 greeting (a client that talks
// before the greeting gets "421 You talk too soon": the early-talker check that catches spam bots
// that do not wait). It has no option for it, and the pause caps one sending session at about ten
// new connections a second. This makes the pause configurable (`smtp.greetingDelay`, default
// 100 = smtp-server's own) by replacing the connection's ready step with our own timer; the
// early-talker check itself is unchanged (data before the greeting is still refused), only its
// window moves. Implicit-TLS connections (`needsUpgrade`) keep smtp-server's own timing.
import type { SMTPServer } from 'smtp-server';
import { onConnection } from './internals.js';

/** smtp-server's built-in pause (node_modules/smtp-server/dist/esm/smtp-connection.js init()). */
const BUILT_IN_GREETING_DELAY_MS = 100;

export function setGreetingDelay(server: SMTPServer, delayMs: number): void {
  if (delayMs === BUILT_IN_GREETING_DELAY_MS) return;
  onConnection(server, (c) => {
    if (c.needsUpgrade) return;
    const ready = c.connectionReady.bind(c);
    // smtp-server's own 100 ms timer now finds a no-op; ours sends the greeting.
    c.connectionReady = () => {};
    const timer = setTimeout(() => {
      if (!c._closing && !c._closed) ready();
    }, delayMs);
    timer.unref();
  });
}
