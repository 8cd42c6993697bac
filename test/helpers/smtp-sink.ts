// Shared pieces of the email tests: a loopback SMTP sink playing a remote MX (or a relay), a
// verified sending domain with a fresh 2048-bit key, and a Delivery built by hand.
import { generateKeyPairSync } from 'node:crypto';
import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import type { App } from '../../src/app.js';
import type { ChannelTransport, Delivery, OutboundMessage } from '../../src/channel.js';
import { createEmailTransport, createTokenSource } from '../../src/channels/email/index.js';
import type { Config } from '../../src/config.js';
import { createSuppressionStore, type SuppressionStore } from '../../src/suppressions/store.js';
import { startDnsServer, type DnsServer, type ZoneRecord } from './dns-server.js';
import { outboundMessage } from './outbound-message.js';
import type { EmailOutput } from '../../src/contract/channels.js';

export interface Received {
  /** When the final dot arrived (ms since the epoch, before any answer delay). */
  at: number;
  from: string;
  /** MAIL FROM's BODY parameter, lower-cased (`8bitmime`), or null. */
  body: string | null;
  /** Whether MAIL FROM carried SMTPUTF8. */
  smtpUtf8: boolean;
  to: string[];
  raw: Buffer;
  secure: boolean;
  localAddress: string;
  /** The address the client connected from. */
  remoteAddress: string;
  /** The name the client gave in EHLO/HELO. */
  ehlo: string;
  /** The TLS server name (SNI) the client asked for, when the session is encrypted. */
  servername: string | null;
  /** The user the client authenticated as, or null. */
  user: string | null;
  /** Which connection (1, 2, …, in the order they were opened) carried the message. */
  connection: number;
}

export interface Sink {
  port: number;
  received: Received[];
  /** Connections opened to the sink so far. */
  connections(): number;
  /** The most connections that were open at once. */
  mostOpen(): number;
  /** Connections open now. */
  openNow(): number;
  /** What clients sent, byte for byte, per connection (only when `wire` is set; plain text only). */
  wire: Buffer[][];
  /** Resolves when `n` messages have arrived. */
  waitFor(n: number): Promise<void>;
  /** Messages whose final dot arrived and whose answer is being held (`hold`), by the client's EHLO name. */
  held(): { ehlo: string; to: string[] }[];
  close(): Promise<void>;
}

export interface SinkOptions {
  host?: string;
  port?: number;
  /** Reply for RCPT TO of an address (`ehlo`: the name the client gave): undefined accepts; an object rejects with that code. */
  rcpt?: (address: string, ehlo: string) => { code: number; message: string } | undefined;
  /** Reply after DATA: undefined accepts. */
  data?: (n: number) => { code: number; message: string } | undefined;
  tls?: { key: string; cert: string };
  /** Implicit TLS from the first byte (smtps) with `tls`, instead of STARTTLS. */
  secure?: boolean;
  /** Certificates per TLS server name (SNI), beside the default `tls`. */
  sni?: Record<string, { key: string; cert: string }>;
  auth?: { user: string; pass: string };
  /** Record the bytes clients send (`Sink.wire`). */
  wire?: boolean;
  /** The SIZE limit to advertise (and enforce, 552 5.3.4). */
  size?: number;
  /** Milliseconds to wait after the final dot before answering (a slow receiver). */
  delayMs?: number;
  /** Answers each message only once this resolves (a receiver that holds every message for now). */
  hold?: Promise<void>;
  /** A 7-bit peer: offers neither 8BITMIME nor SMTPUTF8. */
  sevenBit?: boolean;
}

export async function startSink(t: { teardown(fn: () => unknown): void }, opts: SinkOptions = {}): Promise<Sink> {
  const received: Received[] = [];
  const held = new Set<{ ehlo: string; to: string[] }>();
  const waiters: { n: number; resolve: () => void }[] = [];
  let dataCount = 0;
  const wire: Buffer[][] = [];
  // The order in which connections were opened, by smtp-server's session id.
  const connectionOf = new Map<string, number>();
  const startTls = opts.tls && !opts.secure;
  const options: SMTPServerOptions = {
    logger: false,
    disabledCommands: [...(opts.auth ? [] : ['AUTH']), ...(startTls ? [] : ['STARTTLS'])],
    allowInsecureAuth: true,
    authOptional: !opts.auth,
    ...(opts.tls ? { key: opts.tls.key, cert: opts.tls.cert } : {}),
    ...(opts.secure ? { secure: true } : {}),
    ...(opts.sni ? { sniOptions: opts.sni } : {}),
    ...(opts.size ? { size: opts.size } : {}),
    ...(opts.sevenBit ? { hide8BITMIME: true, hideSMTPUTF8: true } : {}),
    onConnect(session, cb) {
      connectionOf.set(session.id, connectionOf.size + 1);
      cb();
    },
    onAuth(auth, _session, cb) {
      if (opts.auth && auth.username === opts.auth.user && auth.password === opts.auth.pass) return cb(null, { user: auth.username });
      cb(new Error('bad credentials'));
    },
    onRcptTo(address, session, cb) {
      const r = opts.rcpt?.(address.address, session.hostNameAppearsAs);
      if (r) return cb(Object.assign(new Error(r.message), { responseCode: r.code }));
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const at = Date.now();
        const reply = () => answer(at);
        const later = () => void (opts.delayMs ? setTimeout(reply, opts.delayMs) : reply());
        if (opts.hold) {
          const entry = { ehlo: session.hostNameAppearsAs, to: session.envelope.rcptTo.map((a) => a.address) };
          held.add(entry);
          void opts.hold.then(() => {
            held.delete(entry);
            later();
          });
          return;
        }
        later();
      });
      const answer = (at: number) => {
        const r = opts.data?.(++dataCount);
        if (r) return cb(Object.assign(new Error(r.message), { responseCode: r.code }));
        received.push({
          at,
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          body: (session.envelope as { bodyType?: string }).bodyType ?? null,
          smtpUtf8: (session.envelope as { smtpUtf8?: boolean }).smtpUtf8 === true,
          to: session.envelope.rcptTo.map((a) => a.address),
          raw: Buffer.concat(chunks),
          secure: session.secure,
          localAddress: session.localAddress,
          remoteAddress: session.remoteAddress,
          ehlo: session.hostNameAppearsAs,
          servername: (session as { servername?: string }).servername ?? null,
          user: typeof session.user === 'string' ? session.user : null,
          connection: connectionOf.get(session.id) ?? 0,
        });
        for (const w of [...waiters])
          if (received.length >= w.n) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve();
          }
        cb();
      };
    },
  };
  const server = new SMTPServer(options);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  // A client that dies mid-session (the SIGKILL test) resets its socket: not the sink's failure.
  server.on('error', () => {});
  let open = 0;
  let most = 0;
  server.server.on('connection', (socket: Socket) => {
    most = Math.max(most, ++open);
    socket.once('close', () => open--);
  });
  if (opts.wire)
    server.server.on('connection', (socket: Socket) => {
      const chunks: Buffer[] = [];
      wire.push(chunks);
      socket.on('data', (c: Buffer) => chunks.push(c));
    });
  const port = (server.server.address() as AddressInfo).port;
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  t.teardown(close);
  return {
    port,
    received,
    connections: () => connectionOf.size,
    mostOpen: () => most,
    openNow: () => open,
    wire,
    held: () => [...held],
    waitFor: (n) => (received.length >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }))),
    close,
  };
}

export function generateDkimKey(): { privateKey: string; publicKey: string; dnsValue: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const b64 = publicKey.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  return { privateKey, publicKey, dnsValue: `v=DKIM1; k=rsa; p=${b64}` };
}

/** Inserts a verified sending domain with a fresh key; returns the DNS TXT value to publish. */
export async function addVerifiedDomain(app: App, workspaceId: string, domain: string, selector = 'postern'): Promise<string> {
  const key = generateDkimKey();
  const now = app.clock.now().toISOString();
  await app.db
    .insertInto('domains')
    .values({
      id: app.ids.uuid(),
      workspace_id: workspaceId,
      domain,
      kind: 'custom',
      status: 'verified',
      dkim_selector: selector,
      dkim_private_key: app.box.seal(key.privateKey),
      dkim_public_key: key.publicKey,
      verified_at: now,
      dkim_verified_at: now,
      mx_verified_at: now,
      created_at: now,
      deleted_at: null,
    })
    .execute();
  return key.dnsValue;
}

export function makeDelivery(
  app: App,
  workspaceId: string,
  over: Partial<OutboundMessage> = {},
  content: Partial<EmailOutput> = {},
): Delivery {
  // Fresh ids per call: email tests keep per-recipient state keyed by the message.
  const message = outboundMessage({
    id: app.ids.uuid(),
    publicId: app.ids.publicId('msg'),
    workspaceId,
    createdAt: app.clock.now().toISOString(),
    ...over,
  });
  return {
    message,
    content: {
      subject: 'Hello',
      preheader: '',
      html: '<p>Hi <a href="https://example.org/x?a=1&amp;b=2">there</a></p>',
      text: 'Hi there',
      ...content,
    },
  };
}

/** A self-signed certificate for the sink's STARTTLS. */
export function selfSignedCert(): { key: string; cert: string } {
  // Generated once for the tests (CN=mx.example.net, valid 100 years); not a secret.
  return { key: TEST_KEY, cert: TEST_CERT };
}

const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCjGiBmnHCBD4ZA
AyVgOxziQ22npebYwY2zpCRGDibpN3jS2lDEMbZ1GzGcUCnmkSniOPMIG3iQNPe7
SstGFu0BW5RkMJcbY4o+Migi4H6yc0bET8ewmTEerEo9L60kc3tvX8Mk/DJvG5lQ
h0754mzg8Z7iyOTFp3LMPowma4pdlb1G7ZH8HSJ3MEyWh4wRzbvMAm6FJ5CFhtpo
BWsraU4V47muGOTkY3UKvx4y3saeQZZx/W8B2/33wWvVITNn3jNCeWIejii82965
ko7X75Y9CuveTLXOK4cgkx+lK/ItG37Zw7BzW7LbI0Dq03xHo6uh1eqYGZs4c+Zp
fVlAalWxAgMBAAECggEADRFLDsWSavi2Mhs+a50Y1ZT+7FtpqSyqwH2SbW11VyKb
YtNcfLeZ7XyCB0rR7JftUeNrr1baHD2uKnqV2jX8g6sVcsiE1swtF4oXtqGjbQM4
5IIa1u6TJai6ovfWqLC670OuJCCznrzIlg/dNz6ZqBUbvIJJd/+QPkZ1np9nnNNB
SitJtqpwXy8HarAkI/Zyu9eVPk9rsWQunxKXmP4cqvVqP29tg7tWU5WTYKnZobEJ
KNs+GXrTnVFeLv+LWxxh5BpZXNKLkzTLASzUUxirksb/7H46MBzOXJGSjv0o0e3Y
Ct9ynaagMd6Ep6g5+lpAUBUkEI3qdCf08Bigjsn1NQKBgQDhYF5SE1bww143PEU7
A+RWBjMadjQBPdGrp9c/fNneZNnrFGcRRyIzhDR7VfNeTDH/6kv3rn4Gv+eaVU6L
JrjycdkR9JBN+aO07j2FUHcZV5TP+NrydmvCzErEN8Qpppp4qQU0FIPfbaNC1JEv
/lFlOZ9OWAfhAOA6/bO2gAsF9QKBgQC5Q5Fpq44QLWuYewgfr1XCDThteiSxPCJx
Gx9N5DqxQFZUfR2dMiwCFkaf+YowHcNXsLBPcgmaVT0esnS5zHac5sxKsfMC9gEM
NrkYNUIFNJyHvhd/JHWNDBeMGA+6oD0V5z8aFoDaxx0E0ZsJn1N8X+1fjZQPqBhs
u1cglHF/TQKBgCHBpV71tpfpKztqs5PbSV/5Hb5g5fkpoTXstbi0oo1E3b7wF1/n
H6BHtPSkMwd0sih6l1ZJtGaeZ7od/N2qtxjZJIIj91k2guaeqGhHXQ9Wpttfkquu
QQW0Q56QG7mBUrGv3y+lwvq8GS/xVq2xkc9vigTZ+pQg5XTwevJiy0PhAoGAVQ6x
j2tlUQYZdStfYnS0keBR/OlsOTcbtQQ3ziIv1Dtup2G+G/LyA49Io6AFEuxHSFZl
zEPWJtZltldGghtehdDtEIo8wSpC9uGU/4lMI2mxSB09WnFZywU3NmnBpvR0tz6x
WP/l7wwlxZWaccOFp/++0vUEel+5vwoQCXQ9260CgYEAgMhWYlcpfNz4DABPwqxd
Xeipp3KyUS/Nd1uNybRiLes6+678bxa7/9GO5Maihdi7gzxuoZVJXQL8VcJQD9Br
uK8+pvPulaHBtBqNUlhoqnlqJlLCuhE+kfWiDeKineD3OD3N2GpF6bnZ0dG0Qo/S
buZWIeT7K/yMSl30z9TWIRc=
-----END PRIVATE KEY-----`;
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIDFTCCAf2gAwIBAgIUUVid9PK4QVFyPEdQDiQmYr6ZbYYwDQYJKoZIhvcNAQEL
BQAwGTEXMBUGA1UEAwwObXguZXhhbXBsZS5uZXQwIBcNMjYxMTIxMDA1MDE4WhgP
MjEyNjEwMjgwMDUwMThaMBkxFzAVBgNVBAMMDm14LmV4YW1wbGUubmV0MIIBIjAN
BgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAoxogZpxwgQ+GQAMlYDsc4kNtp6Xm
2MGNs6QkRg4m6Td40tpQxDG2dRsxnFAp5pEp4jjzCBt4kDT3u0rLRhbtAVuUZDCX
G2OKPjIoIuB+snNGxE/HsJkxHqxKPS+tJHN7b1/DJPwybxuZUIdO+eJs4PGe4sjk
xadyzD6MJmuKXZW9Ru2R/B0idzBMloeMEc27zAJuhSeQhYbaaAVrK2lOFeO5rhjk
5GN1Cr8eMt7GnkGWcf1vAdv998Fr1SEzZ94zQnliHo4ovNveuZKO1++WPQrr3ky1
ziuHIJMfpSvyLRt+2cOwc1uy2yNA6tN8R6OrodXqmBmbOHPmaX1ZQGpVsQIDAQAB
o1MwUTAdBgNVHQ4EFgQUyPDEAyhzMgDbMB5PxXXfq5W0PIEwHwYDVR0jBBgwFoAU
yPDEAyhzMgDbMB5PxXXfq5W0PIEwDwYDVR0TAQH/BAUwAwEB/zANBgkqhkiG9w0B
AQsFAAOCAQEALwlOoEFrcveJ+58ycGEp+KIrzrjkc93+KYgqXoxxP27o55LmZiAW
EWR+AVShT1HF3vwCZttkDtgtKnc90WSl22/fT5cm6oAF/2sgh8RfIAc3qXy4AW5i
Leo4Ledk2vyFOAP4XhLwxwrpVlKeGVQWH+740/7fVvXh8csggtPRZkYh4ZQ09DQV
ED2nI1XA9JBzcc2M0Fu9WvQoqTKltjAZzNc5FPIzbntPqL1G79XyNGYyREeoSNQR
QHrSEFd0i1++lNWX/6TlEKCYolt/Pt2rWThupieVKcMSBwIyRcrKcDMp2s/kUO+K
loka/awhMyG7UNA92yWQatyEJtt32w6xpg==
-----END CERTIFICATE-----`;

export interface RemoteMx {
  sink: Sink;
  dns: DnsServer;
  /** Daemon settings that deliver to the sink: its DNS server, the sink's port, a short idle timeout. */
  env: Record<string, string>;
}

/**
 * A remote MX on loopback: a sink, and a DNS server on which each of `domains` (default
 * example.net) has an MX record naming mx.example.net, at 127.0.0.1.
 */
export async function startRemoteMx(
  t: { teardown(fn: () => unknown): void },
  opts: SinkOptions & { domains?: string[] } = {},
): Promise<RemoteMx> {
  const { domains = ['example.net'], ...sinkOptions } = opts;
  const sink = await startSink(t, sinkOptions);
  const zone: Record<string, ZoneRecord[]> = { 'mx.example.net': [{ type: 'A', data: '127.0.0.1' }] };
  for (const domain of domains) zone[domain] = [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }];
  const dns = await startDnsServer(zone);
  t.teardown(() => dns.close());
  const env = { POSTERN_DNS_SERVERS: dns.address, POSTERN_DELIVERY_PORT: String(sink.port), POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms' };
  return { sink, dns, env };
}

/**
 * The email channel's transport over a test daemon's database, clock, DNS and log, for tests that
 * call deliver() directly; closed at teardown. `config` replaces the daemon's (relay mode, say).
 */
export function emailTransport(
  t: { teardown(fn: () => unknown): void },
  app: App,
  over: { config?: Config; suppressions?: SuppressionStore } = {},
): ChannelTransport {
  const transport = createEmailTransport({
    config: over.config ?? app.config,
    db: app.db,
    dialect: app.dialect,
    clock: app.clock,
    dns: app.dns,
    log: app.log,
    suppressions: over.suppressions ?? createSuppressionStore(app),
    publicUrl: app.publicUrl,
    tokens: createTokenSource(app),
    rules: app.bounceRules,
    destinations: app.destinations,
    budgets: app.budgets,
    box: app.box,
  });
  t.teardown(() => transport.close?.());
  return transport;
}
