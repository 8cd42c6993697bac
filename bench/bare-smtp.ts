// The bare smtp-server every inbound figure is compared with: discards the data, no AUTH, no
// STARTTLS, no reverse lookup, the same greeting pause as Postern (BENCH_GREETING_DELAY_MS). Run as
// its own process, like the daemon, so the load generator never shares its event loop.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { setGreetingDelay } from '../src/smtp/greeting-delay.js';

const bare = new SMTPServer({
  disabledCommands: ['AUTH', 'STARTTLS'],
  authOptional: true,
  logger: false,
  disableReverseLookup: true,
  onData(stream, _s, cb) {
    stream.on('data', () => {});
    stream.on('end', () => cb());
  },
});
setGreetingDelay(bare, Number(process.env.BENCH_GREETING_DELAY_MS));
bare.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ msg: 'ready', port: (bare.server.address() as AddressInfo).port })));
