// smtp-server holds every new connection 100 ms before its 220 greeting (a client that talks
// before the greeting gets "421 You talk too soon": the early-talker check that catches spam bots
// that do not wait). It has no option for it, and the pause caps one sending session at about ten
// new connections a second. This makes the pause configurable (`smtp.greetingDelayMs`, default
// 100 = smtp-server's own) by replacing the connection's ready step with our own timer; the
// early-talker check itself is unchanged (data before the greeting is still refused), only its
// window moves. Implicit-TLS connections (`needsUpgrade`) keep smtp-server's own timing.
import type { Socket } from 'node:net';
import type { SMTPServer } from 'smtp-server';

/** smtp-server's built-in pause (node_modules/smtp-server/dist/esm/smtp-connection.js init()). */
export const BUILT_IN_GREETING_DELAY_MS = 100;

// The parts of smtp-server's internals this relies on (3.x).
interface Connection {
  _socket: Socket;
  needsUpgrade: boolean;
  _closing: boolean;
  _closed: boolean;
  connectionReady(next?: () => void): void;
}
interface ServerInternals {
  connect(socket: Socket, socketOptions: unknown): void;
  connections: Set<Connection>;
  options: { maxClients?: number };
}

export function setGreetingDelay(server: SMTPServer, delayMs: number): void {
  if (delayMs === BUILT_IN_GREETING_DELAY_MS) return;
  const s = server as unknown as ServerInternals;
  const connect = s.connect.bind(server);
  s.connect = (socket, socketOptions) => {
    connect(socket, socketOptions);
    let conn: Connection | undefined;
    for (const c of s.connections) if (c._socket === socket) conn = c;
    // Refused over maxClients (smtp-server already answered 421 and set no timer), or TLS first.
    if (!conn || conn.needsUpgrade || (s.options.maxClients && s.connections.size > s.options.maxClients)) return;
    const ready = conn.connectionReady.bind(conn);
    const c = conn;
    // smtp-server's own 100 ms timer now finds a no-op; ours sends the greeting.
    c.connectionReady = () => {};
    const timer = setTimeout(() => {
      if (!c._closing && !c._closed) ready();
    }, delayMs);
    timer.unref();
  };
}
