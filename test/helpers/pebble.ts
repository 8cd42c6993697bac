// Pebble, Let's Encrypt's ACME test server (Debian package `pebble`), on loopback: its directory
// over HTTPS with a certificate only the test trusts (`caFile`), its validations sent to the ports
// the test names, its names resolved by the test's DNS server. PEBBLE_VA_NOSLEEP drops its random
// validation delay; PEBBLE_WFE_NONCEREJECT=0 keeps it from refusing good nonces at random (a
// client's retry is tested elsewhere, not by chance here); PEBBLE_AUTHZREUSE=0 makes every order
// validate again, so a renewal proves the challenge still works.
import { spawn, type ChildProcess } from 'node:child_process';
import net, { type AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import { freePort } from './ports.js';
import { selfSignedCert } from './self-signed.js';
import { until } from './until.js';

export interface Pebble {
  directoryUrl: string;
  /** The certificate Pebble's own HTTPS listener shows (self-signed): the value for acme.caFile. */
  caFile: string;
  /** The root that signs the certificates Pebble issues (a new one each start). */
  root(): Promise<string>;
  /** Revocation status of a certificate by its serial (hex): `Valid` or `Revoked`. */
  status(serialHex: string): Promise<string>;
  output: string[];
  stop(): Promise<void>;
}

export async function startPebble(opts: { dnsServer: string; httpPort: number; tlsPort: number }): Promise<Pebble> {
  const dir = mkdtempSync(path.join(tmpdir(), 'pebble-'));
  const own = selfSignedCert();
  writeFileSync(path.join(dir, 'cert.pem'), own.cert);
  writeFileSync(path.join(dir, 'key.pem'), own.key);
  const output: string[] = [];
  // Pebble needs its ports named before it starts: a port taken meanwhile by another test makes it
  // exit, and it is started again on new ones.
  for (let attempt = 0; ; attempt++) {
    const [port, management] = [await freePort(), await freePort()];
    writeFileSync(
      path.join(dir, 'config.json'),
      JSON.stringify({
        pebble: {
          listenAddress: `127.0.0.1:${port}`,
          managementListenAddress: `127.0.0.1:${management}`,
          certificate: path.join(dir, 'cert.pem'),
          privateKey: path.join(dir, 'key.pem'),
          httpPort: opts.httpPort,
          tlsPort: opts.tlsPort,
          ocspResponderURL: '',
          externalAccountBindingRequired: false,
        },
      }),
    );
    const child: ChildProcess = spawn('pebble', ['-config', path.join(dir, 'config.json'), '-dnsserver', opts.dnsServer], {
      env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let exited = false;
    const exit = new Promise<void>((resolve) => child.on('exit', () => ((exited = true), resolve())));
    for (const s of [child.stdout!, child.stderr!]) s.on('data', (b: Buffer) => output.push(...b.toString().split('\n').filter(Boolean)));
    const agent = new Agent({ connect: { ca: own.cert } });
    const get = (url: string) => undiciFetch(url, { dispatcher: agent });
    const directoryUrl = `https://127.0.0.1:${port}/dir`;
    const up = await until('Pebble to answer its directory', async () => {
      if (exited) return 'exited';
      return (await get(directoryUrl)
        .then((r) => r.ok)
        .catch(() => false))
        ? 'up'
        : false;
    });
    if (up === 'exited') {
      if (attempt < 3) continue;
      throw new Error(`Pebble did not start: ${output.join('\n')}`);
    }
    return {
      directoryUrl,
      caFile: path.join(dir, 'cert.pem'),
      root: async () => (await get(`https://127.0.0.1:${management}/roots/0`)).text(),
      async status(serialHex) {
        const r = await get(`https://127.0.0.1:${management}/cert-status-by-serial/${serialHex.toLowerCase()}`);
        return ((await r.json()) as { Status: string }).Status;
      },
      output,
      async stop() {
        if (!exited) child.kill('SIGTERM');
        await exit;
        await agent.close();
      },
    };
  }
}

/** A TCP forwarder on an ephemeral port, pointed at its target later (Pebble needs its port first). */
export async function startForwarder(t: { teardown(fn: () => unknown): void }) {
  let target = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => (client.destroy(), upstream.destroy()));
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return {
    port: (server.address() as AddressInfo).port,
    to(port: number) {
      target = port;
    },
  };
}
