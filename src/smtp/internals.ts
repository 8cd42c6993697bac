// smtp-server (3.x) has no hook for what happens between a connection's accept and its greeting, nor
// for each command and each reply, and Postern needs all three: the greeting pause, per-address
// limits, the junk-command budget, the command timeout, and enhanced status codes that are not
// added twice. This is the one place that reaches into its internals: it declares the narrow slice
// relied on (node_modules/smtp-server/dist/esm/smtp-connection.js, smtp-server.js) and hands each
// new connection to the hooks right after smtp-server created it, before anything was sent.
import type { Socket } from 'node:net';
import type { SMTPServer, SMTPServerSession } from 'smtp-server';

export interface Connection {
  id: string;
  _socket: Socket;
  /** The client's address (from the PROXY header when smtp.proxyProtocol is on). */
  remoteAddress: string;
  session: SMTPServerSession;
  needsUpgrade: boolean;
  /** TLS is up: STARTTLS succeeded, or the listener speaks implicit TLS. */
  secure: boolean;
  /** The greeting was sent. */
  _ready: boolean;
  /** Set when STARTTLS starts the handshake, cleared once it succeeded (a failed one leaves it set). */
  _upgrading: boolean;
  _closing: boolean;
  _closed: boolean;
  /** A command's handler has not answered yet. */
  _handlerPending: boolean;
  /** Set from DATA until the reply to the message: the message's stream, as the onData handler reads it. */
  _dataStream: NodeJS.ReadableStream | false | null;
  /** The command parser; `_dataMode` while the message is being received (until its final dot). */
  _parser: { _dataMode: boolean } | false;
  connectionReady(next?: () => void): void;
  /** Every reply goes through this; a 421 also closes the connection. */
  send(code: number, data?: string | string[], context?: string | false): void;
  close(): void;
  /** The errors smtp-server reports for the connection (a failed TLS handshake's among them), before its `error` event on the server. */
  on(event: 'error', listener: (err: Error & { code?: string }) => void): unknown;
  /** Called by the parser with each command line. */
  _onCommand(command: Buffer, callback?: () => void): void;
}

interface ServerInternals {
  connect(socket: Socket, socketOptions: unknown): void;
  connections: Set<Connection>;
}

/** Calls `hook` with each new connection smtp-server accepted (not those it refused over maxClients). */
export function onConnection(server: SMTPServer, hook: (conn: Connection) => void): void {
  const s = server as unknown as ServerInternals;
  const connect = s.connect.bind(server);
  s.connect = (socket, socketOptions) => {
    connect(socket, socketOptions);
    let conn: Connection | undefined;
    for (const c of s.connections) if (c._socket === socket) conn = c;
    if (conn && !conn._closing && !conn._closed) hook(conn);
  };
}

/**
 * Calls `listener` once when the raw socket closes, STARTTLS or not. smtp-server's STARTTLS strips
 * every listener of the raw socket (its upgrade() calls removeAllListeners()), which took a plain
 * `socket.once('close')` with it; the listener is put back each time.
 */
export function onSocketClose(socket: Socket, listener: () => void): void {
  socket.once('close', listener);
  const strip = socket.removeAllListeners.bind(socket);
  socket.removeAllListeners = (event?: string | symbol) => {
    strip(event);
    if (event === undefined || event === 'close') socket.once('close', listener);
    return socket;
  };
}
