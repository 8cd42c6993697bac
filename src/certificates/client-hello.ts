// Reads the server name and the ALPN protocols a TLS ClientHello offers (RFC 8446 §4.1.2, RFC 6066
// §3, RFC 7301 §3), from the bytes a connection opens with, before any TLS is set up. The HTTPS
// listener needs the ALPN list before it picks a certificate, to answer a TLS-ALPN-01 validation
// (`acme-tls/1`) with the challenge certificate while browsers asking for the same name get the
// real one; Node's SNICallback runs before ALPN is known, so the choice is made here first.

export type ClientHello =
  /** More bytes are needed (the record is not complete yet). */
  | { kind: 'partial' }
  /** Not a TLS handshake, or malformed: handed on as it is, for TLS to refuse. */
  | { kind: 'other' }
  | { kind: 'hello'; serverName: string | null; alpn: string[] };

/** The most a ClientHello record may hold (a TLS record's plaintext limit, plus its header). */
export const MAX_HELLO_BYTES = 5 + 16_384;

export function readClientHello(buf: Buffer): ClientHello {
  if (buf.length >= 1 && buf[0] !== 0x16) return { kind: 'other' };
  if (buf.length < 5) return { kind: 'partial' };
  const recordLength = buf.readUInt16BE(3);
  if (buf.length < 5 + recordLength) return recordLength + 5 > MAX_HELLO_BYTES ? { kind: 'other' } : { kind: 'partial' };
  try {
    return parseHello(buf.subarray(5, 5 + recordLength));
  } catch {
    return { kind: 'other' };
  }
}

function parseHello(b: Buffer): ClientHello {
  let at = 0;
  const need = (n: number) => {
    if (at + n > b.length) throw new RangeError('short');
  };
  const u8 = () => (need(1), b[at++]);
  const u16 = () => (need(2), (at += 2), b.readUInt16BE(at - 2));
  const skip = (n: number) => (need(n), (at += n));
  if (u8() !== 0x01) return { kind: 'other' }; // not a ClientHello
  need(3);
  at += 3; // the handshake's length: the record holds it (a hello split over records is refused below)
  skip(2 + 32); // legacy_version, random
  skip(u8()); // legacy_session_id
  skip(u16()); // cipher_suites
  skip(u8()); // legacy_compression_methods
  if (at === b.length) return { kind: 'hello', serverName: null, alpn: [] };
  const extensionsEnd = u16() + at;
  let serverName: string | null = null;
  const alpn: string[] = [];
  while (at + 4 <= extensionsEnd) {
    const type = u16();
    const end = u16() + at;
    need(end - at);
    if (type === 0) {
      // server_name: a list of (type, name); host_name is type 0.
      const listEnd = u16() + at;
      while (at + 3 <= listEnd) {
        const nameType = u8();
        const len = u16();
        need(len);
        if (nameType === 0 && serverName === null) serverName = b.toString('latin1', at, at + len).toLowerCase();
        at += len;
      }
    } else if (type === 16) {
      // application_layer_protocol_negotiation: a list of length-prefixed protocol names.
      const listEnd = u16() + at;
      while (at < listEnd) {
        const len = u8();
        need(len);
        alpn.push(b.toString('latin1', at, at + len));
        at += len;
      }
    }
    at = end;
  }
  return { kind: 'hello', serverName, alpn };
}
