// A plaintext SMTP client up to STARTTLS, on raw sockets: what a test needs to run its own TLS
// handshake on the connection (a version, a certificate it verifies, a client that leaves).
import net from 'node:net';

/** Reads one SMTP reply (its last line "NNN ...") from a plaintext socket. */
export function reply(socket: net.Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString('latin1');
      if (/^\d{3} [^\n]*\n/m.test(buf)) {
        socket.off('data', onData).off('close', onClose);
        resolve(buf);
      }
    };
    const onClose = () => reject(new Error(`closed before a reply: ${JSON.stringify(buf)}`));
    socket.on('data', onData).once('close', onClose);
  });
}

/** Connects, says EHLO and STARTTLS, and returns the socket at the server's 220 go-ahead. */
export async function starttls(port: number): Promise<net.Socket> {
  const socket = net.connect({ port, host: '127.0.0.1' });
  await reply(socket);
  socket.write('EHLO client.example.org\r\n');
  await reply(socket);
  socket.write('STARTTLS\r\n');
  const go = await reply(socket);
  if (!go.startsWith('220 ')) throw new Error(`STARTTLS refused: ${go}`);
  return socket;
}
