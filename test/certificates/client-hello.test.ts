// The ClientHello reader (certificates/client-hello.ts) against Node's own TLS server, its oracle:
// for generated server names and ALPN lists, the name and protocols the reader finds in the bytes a
// real TLS client sends are the ones Node's server reports after its handshake (`servername`, the
// protocols its ALPNCallback is offered), and a connection handed on after being read (the HTTPS
// listener's path) completes its handshake and carries data. Malformed and partial input never
// throws: it is `partial` until a record is whole, `other` when it is not a ClientHello.
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import fc from 'fast-check';
import t from 'tap';
import { MAX_HELLO_BYTES, readClientHello } from '../../src/certificates/client-hello.js';
import { holds } from '../helpers/property.js';
import { selfSignedCert } from '../helpers/self-signed.js';

const pair = selfSignedCert();

/** One TLS connection: what the reader made of its first bytes, and what Node's server saw. */
async function exchange(servername: string | null, alpn: string[]) {
  let offered: string[] = [];
  const secure = tls.createServer({
    ...pair,
    ALPNCallback: ({ protocols }) => {
      offered = protocols;
      return protocols[0];
    },
  });
  let read = { kind: 'partial' } as ReturnType<typeof readClientHello>;
  const seen = new Promise<{ servername: string | null; echoed: string }>((resolve, reject) => {
    secure.on('secureConnection', (s) => {
      const name = (s as tls.TLSSocket & { servername?: string | false }).servername;
      s.once('data', (d) => {
        s.end(d);
        resolve({ servername: name || null, echoed: d.toString() });
      });
    });
    secure.on('tlsClientError', reject);
  });
  const front = net.createServer((socket) => {
    let buf = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      read = readClientHello(buf);
      if (read.kind === 'partial' && buf.length < MAX_HELLO_BYTES) return;
      socket.off('data', onData);
      socket.pause();
      socket.unshift(buf);
      secure.emit('connection', socket);
    };
    socket.on('data', onData);
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  try {
    const client = tls.connect({
      host: '127.0.0.1',
      port: (front.address() as AddressInfo).port,
      rejectUnauthorized: false,
      ...(servername ? { servername } : {}),
      ...(alpn.length ? { ALPNProtocols: alpn } : {}),
    });
    client.on('secureConnect', () => client.write('ping'));
    client.resume(); // 'end' comes once what the server echoed is read
    const [server] = await Promise.all([seen, new Promise((r) => client.once('end', r))]);
    client.destroy();
    return { read, server, offered };
  } finally {
    front.close();
    secure.close();
  }
}

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?$/);
const hostname = fc.array(label, { minLength: 2, maxLength: 4 }).map((l) => l.join('.'));
const protocol = fc.stringMatching(/^[a-z0-9/._-]{1,20}$/);

t.test('the reader finds what Node’s TLS server is offered', async (t) => {
  await holds(
    t,
    'server name and ALPN list',
    fc.asyncProperty(fc.option(hostname, { nil: null }), fc.uniqueArray(protocol, { maxLength: 4 }), async (name, alpn) => {
      const { read, server, offered } = await exchange(name, alpn);
      if (read.kind !== 'hello') throw new Error(`read as ${read.kind}`);
      if (read.serverName !== server.servername) throw new Error(`server name ${read.serverName} ≠ ${server.servername}`);
      if (JSON.stringify(read.alpn) !== JSON.stringify(offered))
        throw new Error(`ALPN ${JSON.stringify(read.alpn)} ≠ ${JSON.stringify(offered)}`);
      if (server.echoed !== 'ping') throw new Error('the handed-on connection did not carry data');
    }),
    40,
  );
});

t.test('the ACME validation’s own hello: acme-tls/1 for the name', async (t) => {
  const { read } = await exchange('mx.postern.test', ['acme-tls/1']);
  t.same(read, { kind: 'hello', serverName: 'mx.postern.test', alpn: ['acme-tls/1'] });
});

t.test('partial and malformed input', async (t) => {
  const { read } = await exchange('a.example', ['http/1.1']);
  t.equal(read.kind, 'hello');
  t.same(readClientHello(Buffer.alloc(0)), { kind: 'partial' });
  t.same(readClientHello(Buffer.from([0x16, 0x03, 0x01])), { kind: 'partial' }, 'a header cut short');
  t.same(readClientHello(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x10, 0x01])), { kind: 'partial' }, 'a record cut short');
  t.same(readClientHello(Buffer.from('GET / HTTP/1.1\r\n')), { kind: 'other' }, 'plain HTTP on the HTTPS port');
  t.same(readClientHello(Buffer.from([0x16, 0x03, 0x01, 0xff, 0xff])), { kind: 'other' }, 'a record longer than TLS allows');
  await holds(
    t,
    'arbitrary bytes after a handshake header never throw',
    fc.property(fc.uint8Array({ maxLength: 300 }), (body) => {
      const record = Buffer.concat([Buffer.from([0x16, 0x03, 0x01, body.length >> 8, body.length & 0xff]), body]);
      const r = readClientHello(record);
      return r.kind === 'hello' || r.kind === 'other';
    }),
  );
});
