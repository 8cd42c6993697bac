// The public URL derived from the listener (src/public-url.ts), and when it earns a warning.
import t from 'tap';
import { derivePublicUrl, publicUrlWarning } from '../src/public-url.js';

const config = (http: string, hostname = 'localhost', publicUrl = '') => ({ publicUrl, hostname, http: { host: http } });

t.test('the public URL: publicUrl, else the listener, a wildcard listener named by hostname', async (t) => {
  const cases: [ReturnType<typeof config>, string][] = [
    [config('127.0.0.1', 'mx.example.com', 'https://postern.example.com/'), 'https://postern.example.com'],
    [config('0.0.0.0', 'mx.example.com', 'https://postern.example.com'), 'https://postern.example.com'],
    [config('127.0.0.1'), 'http://127.0.0.1:8025'],
    [config('::1'), 'http://[::1]:8025'],
    [config('192.0.2.10', 'mx.example.com'), 'http://192.0.2.10:8025'],
    [config('0.0.0.0', 'mx.example.com'), 'http://mx.example.com:8025'],
    [config('0.0.0.0'), 'http://localhost:8025'],
    [config('::', 'mx.example.com'), 'http://mx.example.com:8025'],
    [config('0:0:0:0:0:0:0:0'), 'http://localhost:8025'],
  ];
  for (const [c, url] of cases) t.equal(derivePublicUrl(c, 8025), url, JSON.stringify(c));
});

t.test('a warning when publicUrl is empty and the derived URL only reaches this machine', async (t) => {
  const cases: [ReturnType<typeof config>, boolean][] = [
    [config('127.0.0.1'), true],
    [config('127.0.1.1', 'mx.example.com'), true],
    [config('::1'), true],
    [config('0.0.0.0'), true],
    [config('localhost'), true],
    [config('0.0.0.0', 'mx.example.com'), false],
    [config('192.0.2.10'), false],
    [config('127.0.0.1', 'localhost', 'https://postern.example.com'), false],
  ];
  for (const [c, warns] of cases) {
    const warning = publicUrlWarning(c, derivePublicUrl(c, 8025));
    if (warns) t.match(warning, /publicUrl is empty.*only this machine can reach.*POSTERN_PUBLIC_URL/, JSON.stringify(c));
    else t.equal(warning, null, JSON.stringify(c));
  }
});
