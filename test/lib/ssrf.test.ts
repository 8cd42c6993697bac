// The SSRF guard's address table (lib/ssrf.ts); its use is tested where it guards: webhooks
// (test/webhooks/ssrf.test.ts) and channels (web push and provider base URLs).
import t from 'tap';
import { isPrivateAddress } from '../../src/lib/ssrf.js';

t.test('private address table', async (t) => {
  const cases: [string, boolean][] = [
    ['127.0.0.1', true],
    ['127.255.0.9', true],
    ['10.0.0.1', true],
    ['172.16.5.4', true],
    ['172.32.0.1', false],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    ['224.0.0.1', true],
    ['8.8.8.8', false],
    ['93.184.216.34', false],
    ['::1', true],
    ['::', true],
    ['fe80::1', true],
    ['fd00::1', true],
    ['::ffff:127.0.0.1', true],
    ['::ffff:8.8.8.8', false],
    ['2606:4700::1111', false],
    ['not-an-ip', true],
  ];
  for (const [ip, expected] of cases) t.equal(isPrivateAddress(ip), expected, ip);
});
