import t from 'tap';
import { ConfigError, databaseTarget, envName, loadConfig } from '../src/config.js';

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
  t.equal(c.memory.heapGrowthPercent, 100, 'heaps may double past what a full collection kept');
  t.equal(c.memory.analysisYoungGenerationMb, 24, 'analysis threads keep half of V8’s young generation');
});

t.test('environment overrides with types', async (t) => {
  const c = loadConfig({
    env: {
      POSTERN_HTTP_PORT: '0',
      POSTERN_DNS_SERVERS: '127.0.0.1:5353, 10.0.0.1',
      POSTERN_RATE_LIMIT_READ: '2.5',
      POSTERN_HTTP_TRUST_PROXY: '1',
      POSTERN_DATABASE_URL: 'postgres://u@h/db',
      POSTERN_MEMORY_HEAP_GROWTH_PERCENT: '0',
      POSTERN_MEMORY_ANALYSIS_YOUNG_GENERATION_MB: '0',
    },
  });
  t.equal(c.memory.heapGrowthPercent, 0);
  t.equal(c.memory.analysisYoungGenerationMb, 0);
  t.equal(c.http.port, 0);
  t.same(c.dns.servers, ['127.0.0.1:5353', '10.0.0.1']);
  t.equal(c.rateLimit.read, 2.5);
  t.equal(c.http.trustProxy, 1);
  t.same(databaseTarget(c), { dialect: 'postgres', url: 'postgres://u@h/db' });
});

t.test('invalid settings name the setting and why', async (t) => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ POSTERN_HTTP_PORT: 'eighty' }, /POSTERN_HTTP_PORT.*number/],
    [{ POSTERN_HTTP_PORT: '70000' }, /http\.port \(POSTERN_HTTP_PORT\)/],
    [{ POSTERN_HTTP_TRUST_PROXY: 'maybe' }, /http\.trustProxy \(POSTERN_HTTP_TRUST_PROXY\): "maybe" is not an address/],
    [{ POSTERN_DNS_SERVERS: 'not a server' }, /dns\.servers/],
    [{ POSTERN_LOG_LEVEL: 'loud' }, /log\.level \(POSTERN_LOG_LEVEL\)/],
    [{ POSTERN_DATABASE_URL: 'mysql://x' }, /databaseUrl \(POSTERN_DATABASE_URL\)/],
    [{ POSTERN_PUBLIC_URL: 'ftp://x' }, /publicUrl/],
    [{ POSTERN_MEMORY_HEAP_GROWTH_PERCENT: '-1' }, /memory\.heapGrowthPercent \(POSTERN_MEMORY_HEAP_GROWTH_PERCENT\)/],
    [{ POSTERN_MEMORY_ANALYSIS_YOUNG_GENERATION_MB: '2' }, /memory\.analysisYoungGenerationMb .*at least 3/],
    [{ POSTERN_DELIVERY_SOURCES: '{"a": {"address": "mta1", "ehlo": "a.example"}}' }, /delivery\.sources\.a\.address.*IPv4 or IPv6/],
    [{ POSTERN_DELIVERY_POOLS: '{"main": ["nope"]}' }, /delivery\.pools\.main.*names nope, which is not in delivery\.sources/],
    [
      { POSTERN_DELIVERY_POOL_ASSIGNMENT_DEFAULT: 'main' },
      /delivery\.poolAssignment\.default.*names main, which is not in delivery\.pools/,
    ],
    [{ POSTERN_DELIVERY_ADDRESS_FAMILY: '{"gmail.com": "ipv5"}' }, /delivery\.addressFamily/],
    [{ POSTERN_DELIVERY_WARM_UP_CURVE: '50,0' }, /delivery\.warmUp\.curve/],
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

t.test('http.trustProxy: a hop count or the proxies’ addresses, never true', async (t) => {
  t.equal(loadConfig({ env: {} }).http.trustProxy, false, 'no proxy is trusted by default');
  const forms: [string, unknown][] = [
    ['1', 1],
    ['2', 2],
    ['0', false],
    ['false', false],
    ['off', false],
    ['', false],
    ['127.0.0.1', ['127.0.0.1']],
    ['127.0.0.1, 10.0.0.0/8,fd00::/8', ['127.0.0.1', '10.0.0.0/8', 'fd00::/8']],
    ['loopback,uniquelocal', ['loopback', 'uniquelocal']],
  ];
  for (const [raw, want] of forms) t.same(loadConfig({ env: { POSTERN_HTTP_TRUST_PROXY: raw } }).http.trustProxy, want, `"${raw}"`);
  t.same(loadConfig({ overrides: { http: { trustProxy: ['10.0.0.1', '::1'] } } }).http.trustProxy, ['10.0.0.1', '::1'], 'a list in a file');
  t.same(loadConfig({ overrides: { http: { trustProxy: 'loopback' } } }).http.trustProxy, ['loopback'], 'a string is a list');

  const refused: [unknown, RegExp][] = [
    [
      true,
      /^invalid setting http\.trustProxy \(POSTERN_HTTP_TRUST_PROXY\): true believes every X-Forwarded-For address a client writes and is refused: give the number of proxies in front of Postern \(1 for one Caddy or nginx\), or their addresses and CIDR ranges/,
    ],
    ['true', /true believes every X-Forwarded-For address/],
    ['yes', /true believes every X-Forwarded-For address/],
    ['10.0.0.0/33', /"10\.0\.0\.0\/33" is not an address, a CIDR range or loopback\/linklocal\/uniquelocal/],
    ['127.0.0.1,proxy.example', /"proxy\.example" is not an address/],
    [-1, /give the number of proxies/],
    [1.5, /give the number of proxies/],
    [100, /give the number of proxies/],
  ];
  for (const [value, pattern] of refused) {
    const from = typeof value === 'string' ? { env: { POSTERN_HTTP_TRUST_PROXY: value } } : { overrides: { http: { trustProxy: value } } };
    t.throws(() => loadConfig(from), pattern, JSON.stringify(value));
    t.throws(() => loadConfig(from), ConfigError);
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

t.test('durations are strings read as milliseconds, with their bounds', async (t) => {
  const c = loadConfig({ env: { POSTERN_DISPATCHER_LEASE: '90s', POSTERN_RETRY_SCHEDULE: '30s, 2m', POSTERN_TAIL_PING: '250ms' } });
  t.equal(c.dispatcher.lease, 90_000);
  t.same(c.retry.schedule, [30_000, 120_000]);
  t.equal(c.tail.ping, 250);
  t.equal(c.retry.maxAge, 5 * 86_400_000, 'the default retry.maxAge is 5d');
  t.equal(c.inbound.retention, 30 * 86_400_000);
  t.throws(
    () => loadConfig({ env: { POSTERN_DISPATCHER_LEASE: '300' } }),
    /dispatcher\.lease \(POSTERN_DISPATCHER_LEASE\): must be a duration/,
  );
  t.throws(() => loadConfig({ env: { POSTERN_DISPATCHER_LEASE: '1s' } }), /dispatcher\.lease .*must be 5s to 1d/);
  t.throws(
    () => loadConfig({ env: { POSTERN_WEBHOOKS_TIMEOUT: '2m', POSTERN_WEBHOOKS_LEASE: '1m' } }),
    /webhooks\.timeout .*120s|lease must exceed timeout/,
  );
});

t.test("one plans tree holds a plan's quotas, template count, sending domain and caps", async (t) => {
  const c = loadConfig({ env: { POSTERN_PLANS_FREE_INBOUND_PER_MONTH: '7', POSTERN_PLANS_PRO_SENDER_CAPS_DOMAIN_DAY: '9' } });
  t.same(c.plans.free, {
    messagesPerMonth: 500,
    templates: 10,
    customSendingDomain: false,
    inboundPerMonth: 7,
    senderCaps: { shared: { day: 50, month: 500 }, domain: { day: 0, month: 0 } },
  });
  t.equal(c.plans.pro.senderCaps.domain.day, 9);
  t.equal(c.plans.starter.customSendingDomain, true);
});

t.test('settings renamed in 0.2.0 still work for one release, with a warning naming the new key', async (t) => {
  const warnings: string[] = [];
  const warn = (m: string) => void warnings.push(m);
  const dir = t.testdir({
    'old.json': JSON.stringify({
      smtp: { socketTimeoutMs: 45000 },
      retry: { schedule: [60, 300], maxAgeHours: 2 },
      inbound: { monthlyQuota: { free: 3 }, storeWorker: true },
      senderCaps: { plans: { free: { shared: { day: 4, month: 40 } } } },
    }),
    'both.json': JSON.stringify({ dispatcher: { intervalMs: 500, interval: '2s' } }),
  });
  const c = loadConfig({
    file: `${dir}/old.json`,
    env: { POSTERN_TAIL_PING_SECONDS: '0.05', POSTERN_DISPATCHER_LEASE_SECONDS: '30', POSTERN_INBOUND_MONTHLY_QUOTA: '{"starter":11}' },
    warn,
  });
  t.equal(c.smtp.socketTimeout, 45_000);
  t.same(c.retry.schedule, [60_000, 300_000], 'seconds become durations');
  t.equal(c.retry.maxAge, 2 * 3_600_000);
  t.equal(c.plans.free.inboundPerMonth, 3);
  t.equal(c.plans.starter.inboundPerMonth, 11, 'the old JSON map of the environment');
  t.same(c.plans.free.senderCaps.shared, { day: 4, month: 40 });
  t.equal(c.tail.ping, 50);
  t.equal(c.dispatcher.lease, 30_000);
  const all = warnings.join('\n');
  t.match(
    all,
    /smtp\.socketTimeoutMs \(POSTERN_SMTP_SOCKET_TIMEOUT_MS\) is deprecated .*use smtp\.socketTimeout \(POSTERN_SMTP_SOCKET_TIMEOUT\)/,
  );
  t.match(all, /tail\.pingSeconds .*use tail\.ping/);
  t.match(all, /dispatcher\.leaseSeconds .*use dispatcher\.lease/);
  t.match(all, /inbound\.monthlyQuota .*plans\.<plan>\.inboundPerMonth/);
  t.match(all, /senderCaps\.plans\.free\.shared\.day .*use plans\.free\.senderCaps\.shared\.day/);
  t.match(all, /retry\.schedule .* in seconds is deprecated/);
  t.match(all, /inbound\.storeWorker .* is ignored/);
  t.equal(loadConfig({ file: `${dir}/both.json`, warn }).dispatcher.interval, 2_000, 'the new name wins over the old one');
  t.same(loadConfig({ env: {}, warn: (m) => t.fail(m) }).dispatcher.interval, 1_000, 'the defaults warn about nothing');
});

t.test('a POSTERN_* variable that names no setting is warned about, with the closest setting', async (t) => {
  const dir = t.testdir({ 'c.json': '{}' });
  const warnings: string[] = [];
  const c = loadConfig({
    env: {
      POSTERN_HTTP_PROT: '9000',
      POSTERN_DATABASE_ULR: 'postgres://x/y',
      POSTERN_FROBNICATE: 'yes',
      // Read by Postern without being settings: the config file, the 0.1.0 names, and the test suite's server.
      POSTERN_CONFIG: `${dir}/c.json`,
      POSTERN_DISPATCHER_LEASE_SECONDS: '30',
      POSTERN_INBOUND_MONTHLY_QUOTA: '{"free": 3}',
      POSTERN_INBOUND_STORE_WORKER: 'true',
      POSTERN_TEST_DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test',
      // Settings, including a map and an object path.
      POSTERN_HTTP_PORT: '0',
      POSTERN_DELIVERY_DOMAIN_RATES: '{"example.com": "5/min"}',
      POSTERN_PLANS_FREE_SENDER_CAPS_SHARED_DAY: '3',
      HTTP_PROXY: 'not ours',
    },
    warn: (m) => void warnings.push(m),
  });
  t.equal(c.http.port, 0);
  const unknown = warnings.filter((w) => /names no setting/.test(w));
  t.same(unknown, [
    'POSTERN_DATABASE_ULR names no setting and is ignored; did you mean POSTERN_DATABASE_URL?',
    'POSTERN_FROBNICATE names no setting and is ignored',
    'POSTERN_HTTP_PROT names no setting and is ignored; did you mean POSTERN_HTTP_PORT?',
  ]);
  t.notOk(
    warnings.some((w) => w.includes('\n')),
    'one line each',
  );
});

t.test('a config file that is named but missing is an error, from --config or POSTERN_CONFIG', async (t) => {
  t.throws(
    () => loadConfig({ file: '/nonexistent/postern.json' }),
    /cannot read config file \/nonexistent\/postern\.json \(--config\): it does not exist/,
  );
  t.throws(
    () => loadConfig({ env: { POSTERN_CONFIG: '/nonexistent/postern.json' } }),
    /cannot read config file \/nonexistent\/postern\.json \(POSTERN_CONFIG\): it does not exist/,
  );
  t.throws(() => loadConfig({ env: { POSTERN_CONFIG: '' } }), /POSTERN_CONFIG is set but empty/);
  const dir = t.testdir({ sub: {} });
  t.throws(() => loadConfig({ file: `${dir}/sub` }), /cannot read config file .*sub \(--config\): it is a directory/);
});
