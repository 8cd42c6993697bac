// The HTTPS listener: the same app as the HTTP listener, behind TLS with the certificates Postern
// obtained (certificates/serving.ts: the client's SNI name's, else `hostname`'s). With TLS-ALPN-01
// it also answers the CA's validation (RFC 8737): a connection offering `acme-tls/1` for a name with
// a challenge under way gets the challenge certificate and is closed after the handshake; every
// other connection is handed to the HTTPS server untouched. The choice needs the ClientHello's ALPN
// list before TLS starts, so connections are read here first (certificates/client-hello.ts).
import net from 'node:net';
import https from 'node:https';
import tls from 'node:tls';
import type { RequestListener } from 'node:http';
import { alpnCertificate, alpnToken, MAX_HELLO_BYTES, readClientHello, type ServedCertificates } from '../certificates/index.js';
import type { Logger } from '../lib/logger.js';

/** How long a client may take to send its ClientHello before the connection is dropped. */
const HELLO_TIMEOUT_MS = 10_000;

export interface HttpsListener {
  /** The server to listen with (a plain TCP server in front of the HTTPS one under TLS-ALPN-01). */
  readonly server: net.Server;
  readonly https: https.Server;
}

export function createHttpsListener(deps: {
  app: RequestListener;
  served: ServedCertificates;
  log: Logger;
  /** Under TLS-ALPN-01: the key authorization kept for a token (certificates/store.ts). */
  challenge?: (token: string) => Promise<string | null>;
}): HttpsListener {
  const { served, log } = deps;
  const secure = https.createServer({ ...served.defaultPair(), SNICallback: served.sniCallback, minVersion: 'TLSv1.2' }, deps.app);
  secure.keepAliveTimeout = 65_000;
  served.onChange(() => secure.setSecureContext({ ...served.defaultPair(), minVersion: 'TLSv1.2' }));
  const challenge = deps.challenge;
  if (!challenge) return { server: secure, https: secure };

  const answerValidation = async (socket: net.Socket, name: string, keyAuthorization: string, hello: Buffer) => {
    const pair = await alpnCertificate(name, keyAuthorization);
    // The bytes read so far go back in front: TLS reads what the socket holds before its handle.
    socket.unshift(hello);
    const tlsSocket = new tls.TLSSocket(socket, {
      isServer: true,
      secureContext: tls.createSecureContext({ ...pair, minVersion: 'TLSv1.2' }),
      ALPNProtocols: ['acme-tls/1'],
    });
    tlsSocket.on('secure', () => tlsSocket.end());
    tlsSocket.on('error', () => socket.destroy());
  };

  const front = net.createServer((socket) => {
    let received = Buffer.alloc(0);
    socket.setTimeout(HELLO_TIMEOUT_MS, () => socket.destroy());
    socket.on('error', () => socket.destroy());
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const hello = readClientHello(received);
      if (hello.kind === 'partial' && received.length < MAX_HELLO_BYTES) return;
      socket.off('data', onData);
      socket.pause();
      socket.setTimeout(0);
      const handOn = () => {
        socket.unshift(received);
        secure.emit('connection', socket);
      };
      if (hello.kind !== 'hello' || !hello.serverName || !hello.alpn.includes('acme-tls/1')) return handOn();
      const name = hello.serverName;
      void challenge(alpnToken(name))
        .then((keyAuthorization) => (keyAuthorization ? answerValidation(socket, name, keyAuthorization, received) : handOn()))
        .catch((err: unknown) => {
          log.warn({ err, name }, 'answering a TLS-ALPN-01 validation failed');
          socket.destroy();
        });
    };
    socket.on('data', onData);
  });
  return { server: front, https: secure };
}
