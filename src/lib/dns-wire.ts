// DNS questions Node's resolver cannot ask: TLSA records, and whether the resolver vouched for an
// answer (the AD bit, RFC 4035 §3.2.3). DANE (RFC 7672) needs both. The query goes over UDP to the
// configured resolvers with EDNS0 and the DO and AD bits set (RFC 6840 §5.7), and again over TCP
// when the answer is truncated. The AD bit means something only when the resolver validates and
// the path to it cannot be tampered with, so a caller trusts it only when `dns.dnssec` says so:
// that decision is made once, here, by `trustAd`.
import dgram from 'node:dgram';
import { getServers } from 'node:dns';
import net from 'node:net';
import dnsPacket from 'dns-packet';

export interface TlsaRecord {
  usage: number;
  selector: number;
  matchingType: number;
  /** The certificate association data. */
  data: Buffer;
}

export type WireRcode = 'NOERROR' | 'NXDOMAIN' | 'SERVFAIL' | 'OTHER';

export interface WireAnswer<T> {
  rcode: WireRcode;
  /** The resolver set AD and `dns.dnssec` says to believe it. */
  authenticated: boolean;
  records: T[];
}

export interface WireDns {
  mx(name: string): Promise<WireAnswer<{ exchange: string; priority: number }>>;
  tlsa(name: string): Promise<WireAnswer<TlsaRecord>>;
}

class DnsWireError extends Error {
  constructor(
    message: string,
    readonly code: 'ETIMEOUT' | 'EBADRESP',
  ) {
    super(message);
  }
}

function endpoint(server: string): { host: string; port: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(server);
  if (bracketed) return { host: bracketed[1], port: Number(bracketed[2] ?? 53) };
  if (net.isIP(server)) return { host: server, port: 53 };
  const i = server.lastIndexOf(':');
  return { host: server.slice(0, i), port: Number(server.slice(i + 1)) };
}

function udpAsk(server: { host: string; port: number }, packet: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(net.isIPv6(server.host) ? 'udp6' : 'udp4');
    const id = packet.readUInt16BE(0);
    const timer = setTimeout(() => finish(new DnsWireError(`no answer from ${server.host} within ${timeoutMs} ms`, 'ETIMEOUT')), timeoutMs);
    const finish = (err: Error | null, msg?: Buffer) => {
      clearTimeout(timer);
      socket.close();
      if (err) reject(err);
      else resolve(msg!);
    };
    socket.on('error', (err) => finish(err));
    socket.on('message', (msg) => {
      // Answers to other questions (spoofed or late) are ignored, not believed.
      if (msg.length >= 2 && msg.readUInt16BE(0) === id) finish(null, msg);
    });
    socket.send(packet, server.port, server.host);
  });
}

function tcpAsk(server: { host: string; port: number }, packet: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, server.host);
    let buf = Buffer.alloc(0);
    socket.setTimeout(timeoutMs, () =>
      socket.destroy(new DnsWireError(`no answer from ${server.host} within ${timeoutMs} ms`, 'ETIMEOUT')),
    );
    socket.on('error', reject);
    socket.on('connect', () => {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(packet.length);
      socket.write(Buffer.concat([len, packet]));
    });
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        socket.end();
        resolve(buf.subarray(2, 2 + buf.readUInt16BE(0)));
      }
    });
  });
}

const RCODES: Record<number, WireRcode> = { 0: 'NOERROR', 2: 'SERVFAIL', 3: 'NXDOMAIN' };
const rcodeOf = (p: dnsPacket.DecodedPacket): WireRcode => RCODES[(p.flags ?? 0) & 0xf] ?? 'OTHER';

/**
 * A client for `dns.servers` (the system's resolvers when empty). `trustAd` is `dns.dnssec`: when
 * false every answer is unauthenticated whatever the resolver says.
 */
export function createWireDns(servers: string[], timeoutMs: number, trustAd: boolean): WireDns {
  const targets = () => (servers.length ? servers : getServers()).map(endpoint);

  async function ask(name: string, type: 'MX' | 'TLSA'): Promise<dnsPacket.DecodedPacket> {
    const packet = dnsPacket.encode({
      type: 'query',
      id: Math.floor(Math.random() * 65536),
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.AUTHENTIC_DATA,
      questions: [{ type, name, class: 'IN' }],
      additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 1232, flags: dnsPacket.DNSSEC_OK } as dnsPacket.Answer],
    });
    let lastError: unknown = new DnsWireError('no DNS server to ask', 'ETIMEOUT');
    // Two rounds over the servers, as the system resolver's `tries: 2`.
    for (let round = 0; round < 2; round++) {
      for (const server of targets()) {
        try {
          let reply = dnsPacket.decode(await udpAsk(server, packet, timeoutMs));
          if ((reply.flags ?? 0) & dnsPacket.TRUNCATED_RESPONSE) reply = dnsPacket.decode(await tcpAsk(server, packet, timeoutMs));
          if (rcodeOf(reply) === 'SERVFAIL' && round === 0) {
            lastError = new DnsWireError(`${server.host} answered SERVFAIL`, 'EBADRESP');
            continue;
          }
          return reply;
        } catch (err) {
          lastError = err instanceof DnsWireError ? err : new DnsWireError(String((err as Error)?.message ?? err), 'EBADRESP');
        }
      }
    }
    throw lastError;
  }

  async function answer<T>(name: string, type: 'MX' | 'TLSA', pick: (a: dnsPacket.Answer) => T | null): Promise<WireAnswer<T>> {
    const reply = await ask(name, type);
    const records = (reply.answers ?? []).map(pick).filter((x): x is T => x !== null);
    return {
      rcode: rcodeOf(reply),
      authenticated: trustAd && ((reply.flags ?? 0) & dnsPacket.AUTHENTIC_DATA) !== 0,
      records,
    };
  }

  return {
    mx: (name) =>
      answer(name, 'MX', (a) =>
        a.type === 'MX' ? { exchange: a.data.exchange.toLowerCase().replace(/\.$/, ''), priority: a.data.preference ?? 0 } : null,
      ),
    tlsa: (name) =>
      answer(name, 'TLSA', (a) => {
        if (a.type !== 'TLSA') return null;
        const d = a.data;
        return { usage: d.usage, selector: d.selector, matchingType: d.matchingType, data: Buffer.from(d.certificate) };
      }),
  };
}
