import t from 'tap';
import { ConfigError, databaseTarget, envName, loadConfig } from '../../src/config.js';

t.test('env names derive from key paths', async (t) => {
  const cases: [string[], string][] = [
    [['dataDir'], 'POSTERN_DATA_DIR'],
    [['databaseUrl'], 'POSTERN_DATABASE_URL'],
    [['http', 'port'], 'POSTERN_HTTP_PORT'],
    [['rateLimit', 'send'], 'POSTERN_RATE_LIMIT_SEND'],
    [['dns', 'servers'], 'POSTERN_DNS_SERVERS'],
    [['sharedInboundDomain'], 'POSTERN_SHARED_INBOUND_DOMAIN'],
  ];
  for (const [p, name] of cases) t.equal(envName(p), name);
});

t.test('defaults are safe', async (t) => {
  const c = loadConfig({ env: {} });
  t.equal(c.http.host, '127.0.0.1');
  t.equal(c.http.port, 8025);
  t.equal(c.smtp.port, 2525);
  t.equal(c.dataDir, './data');
  t.match(databaseTarget(c), { dialect: 'sqlite', file: /data\/postern\.sqlite$/ });
});

t.test('environment overrides with types', async (t) => {
  const c = loadConfig({
    env: {
      POSTERN_HTTP_PORT: '0',
      POSTERN_DNS_SERVERS: '127.0.0.1:5353, 10.0.0.1',
      POSTERN_RATE_LIMIT_READ: '2.5',
      POSTERN_HTTP_TRUST_PROXY: 'true',
      POSTERN_DATABASE_URL: 'postgres://u@h/db',
    },
  });
  t.equal(c.http.port, 0);
  t.same(c.dns.servers, ['127.0.0.1:5353', '10.0.0.1']);
  t.equal(c.rateLimit.read, 2.5);
  t.equal(c.http.trustProxy, true);
  t.same(databaseTarget(c), { dialect: 'postgres', url: 'postgres://u@h/db' });
});

t.test('invalid settings name the setting and why', async (t) => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ POSTERN_HTTP_PORT: 'eighty' }, /POSTERN_HTTP_PORT.*number/],
    [{ POSTERN_HTTP_PORT: '70000' }, /http\.port \(POSTERN_HTTP_PORT\)/],
    [{ POSTERN_HTTP_TRUST_PROXY: 'maybe' }, /POSTERN_HTTP_TRUST_PROXY.*true or false/],
    [{ POSTERN_DNS_SERVERS: 'not a server' }, /dns\.servers/],
    [{ POSTERN_LOG_LEVEL: 'loud' }, /log\.level \(POSTERN_LOG_LEVEL\)/],
    [{ POSTERN_DATABASE_URL: 'mysql://x' }, /databaseUrl \(POSTERN_DATABASE_URL\)/],
    [{ POSTERN_PUBLIC_URL: 'ftp://x' }, /publicUrl/],
  ];
  for (const [env, pattern] of bad) {
    let caught: unknown;
    try {
      loadConfig({ env });
    } catch (err) {
      caught = err;
    }
    t.ok(caught instanceof ConfigError, JSON.stringify(env));
    t.match((caught as Error)?.message, pattern);
  }
});

t.test('a config file merges over defaults and under the environment', async (t) => {
  const dir = t.testdir({
    'c.json': JSON.stringify({ hostname: 'mx.example.com', http: { port: 9000 } }),
    'bad.json': '{nope',
    'typo.json': '{"htpp": {}}',
  });
  const c = loadConfig({ env: { POSTERN_HTTP_PORT: '9001' }, file: `${dir}/c.json` });
  t.equal(c.hostname, 'mx.example.com');
  t.equal(c.http.port, 9001);
  t.equal(c.http.host, '127.0.0.1');
  t.throws(() => loadConfig({ file: `${dir}/bad.json` }), /not valid JSON/);
  t.throws(() => loadConfig({ file: `${dir}/typo.json` }), /htpp|Unrecognized/i);
  t.throws(() => loadConfig({ file: `${dir}/missing.json` }), /cannot read/);
});
