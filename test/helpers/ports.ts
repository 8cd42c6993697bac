// A loopback port free at the moment of asking, for a peer or daemon that must be told its port
// before it starts (a config file, an environment variable).
import net, { type AddressInfo } from 'node:net';

export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}
