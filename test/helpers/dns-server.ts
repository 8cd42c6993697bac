// A real DNS server on loopback UDP that answers from a zone the test declares, so the daemon's
// resolver (POSTERN_DNS_SERVERS) is exercised over the wire. Unknown names are NXDOMAIN; a known
// name without the asked type is an empty NOERROR answer (NODATA). It plays a validating resolver
// too: an answer about names the test `sign`ed carries the AD bit when the question asked for it
// (AD or DO set), and a name the test `breaks` answers SERVFAIL.
import dgram from 'node:dgram';
import dnsPacket from 'dns-packet';

export type ZoneRecord =
  | { type: 'A' | 'AAAA' | 'PTR' | 'CNAME' | 'NS'; data: string; ttl?: number }
  | { type: 'MX'; data: { preference: number; exchange: string }; ttl?: number }
  | { type: 'TXT'; data: string | string[]; ttl?: number }
  | { type: 'TLSA'; data: { usage: number; selector: number; matchingType: number; certificate: Buffer }; ttl?: number };

export interface DnsServer {
  /** `127.0.0.1:port`, the value for POSTERN_DNS_SERVERS. */
  address: string;
  port: number;
  /** Replaces the records of a name (lowercase, no trailing dot). */
  set(name: string, records: ZoneRecord[]): void;
  add(name: string, record: ZoneRecord): void;
  remove(name: string): void;
  /** Answers about `name` are DNSSEC-validated (AD), as a validating resolver would say. */
  sign(name: string): void;
  /** Questions about `name` get SERVFAIL (a broken or tampered zone). */
  breaks(name: string): void;
  /** Every question asked, as `TYPE name`. */
  queries: string[];
  close(): Promise<void>;
}

const norm = (name: string) => name.toLowerCase().replace(/\.$/, '');

// TXT character-strings are at most 255 bytes; long values (DKIM keys) are split as publishers do.
function txtChunks(value: string | string[]): string[] {
  const parts = Array.isArray(value) ? value : [value];
  return parts.flatMap((p) => {
    const out: string[] = [];
    for (let i = 0; i < p.length; i += 255) out.push(p.slice(i, i + 255));
    return out.length ? out : [''];
  });
}

export async function startDnsServer(zone: Record<string, ZoneRecord[]> = {}): Promise<DnsServer> {
  const records = new Map<string, ZoneRecord[]>();
  for (const [name, recs] of Object.entries(zone)) records.set(norm(name), recs);
  const queries: string[] = [];
  const signed = new Set<string>();
  const broken = new Set<string>();
  const socket = dgram.createSocket('udp4');

  socket.on('message', (msg, rinfo) => {
    let query;
    try {
      query = dnsPacket.decode(msg);
    } catch {
      return;
    }
    const answers: dnsPacket.Answer[] = [];
    let rcode = 0;
    const wantsAd =
      ((query.flags ?? 0) & dnsPacket.AUTHENTIC_DATA) !== 0 ||
      (query.additionals ?? []).some((a) => a.type === 'OPT' && ((a as { flags?: number }).flags ?? 0) & dnsPacket.DNSSEC_OK);
    let authentic = wantsAd && (query.questions ?? []).length > 0;
    for (const q of query.questions ?? []) {
      const name = norm(q.name);
      queries.push(`${q.type} ${name}`);
      if (!signed.has(name)) authentic = false;
      if (broken.has(name)) {
        rcode = 2; // SERVFAIL
        authentic = false;
        continue;
      }
      const recs = records.get(name);
      if (!recs) {
        rcode = 3; // NXDOMAIN
        continue;
      }
      for (const r of recs) {
        if (r.type !== q.type) continue;
        const data = r.type === 'TXT' ? txtChunks(r.data) : r.data;
        answers.push({ type: r.type, name: q.name, ttl: r.ttl ?? 60, class: 'IN', data } as dnsPacket.Answer);
      }
    }
    const response = dnsPacket.encode({
      type: 'response',
      id: query.id,
      flags:
        dnsPacket.AUTHORITATIVE_ANSWER |
        dnsPacket.RECURSION_DESIRED |
        dnsPacket.RECURSION_AVAILABLE |
        (authentic ? dnsPacket.AUTHENTIC_DATA : 0) |
        rcode,
      questions: query.questions,
      answers,
    });
    socket.send(response, rinfo.port, rinfo.address);
  });

  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  const port = socket.address().port;
  return {
    address: `127.0.0.1:${port}`,
    port,
    queries,
    set: (name, recs) => void records.set(norm(name), recs),
    add: (name, rec) => void records.set(norm(name), [...(records.get(norm(name)) ?? []), rec]),
    remove: (name) => void records.delete(norm(name)),
    sign: (name) => void signed.add(norm(name)),
    breaks: (name) => void broken.add(norm(name)),
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}
