// The names a test run takes from the environment (issue 34): the prefix of the PostgreSQL
// databases it creates and the Redis it keeps budgets in, so two runs on one machine cannot meet.
// On a server, two prefixes — one starting the other, as `postern_t_` starts CI's `postern_t_<pid>_`
// — each see only their own databases.
import t from 'tap';
import { freshPostgres, isTestDatabaseOf, testDatabaseName, testDatabasePrefix, testDatabasesOf, testRedisUrl } from './databases.js';

t.test('the database prefix: POSTERN_TEST_DB_PREFIX, or postern_t_', async (t) => {
  t.equal(testDatabasePrefix({}), 'postern_t_');
  t.equal(testDatabasePrefix({ POSTERN_TEST_DB_PREFIX: '' }), 'postern_t_', 'empty is unset');
  t.equal(testDatabasePrefix({ POSTERN_TEST_DB_PREFIX: 'postern_t_4242_' }), 'postern_t_4242_');
  for (const bad of ['Postern_', 'postern-t-', '1postern_', 'postern t', 'p'.repeat(52), 'postern_t_;drop']) {
    t.throws(() => testDatabasePrefix({ POSTERN_TEST_DB_PREFIX: bad }), /POSTERN_TEST_DB_PREFIX must be/, JSON.stringify(bad));
  }
  t.equal(testDatabasePrefix({ POSTERN_TEST_DB_PREFIX: 'p'.repeat(51) }), 'p'.repeat(51), 'the longest leaves room for the suffix');
});

t.test('a name is the prefix and 12 hex digits, and belongs to that prefix only', async (t) => {
  const name = testDatabaseName('postern_t_4242_');
  t.match(name, /^postern_t_4242_[0-9a-f]{12}$/);
  t.ok(isTestDatabaseOf('postern_t_4242_', name));
  t.notOk(isTestDatabaseOf('postern_t_', name), 'not of a prefix that starts it');
  t.notOk(isTestDatabaseOf('postern_t_4242_', testDatabaseName('postern_t_')), 'nor the other way round');
  t.notOk(isTestDatabaseOf('postern_t_', 'postern_t_abc'), 'nor a name of another shape');
  t.not(testDatabaseName('x_'), testDatabaseName('x_'), 'random');
  t.ok(testDatabaseName().startsWith(testDatabasePrefix()), "this run's prefix by default");
});

t.test('the Redis URL: POSTERN_TEST_REDIS_URL, or database 0 on 127.0.0.1:6379', async (t) => {
  t.equal(testRedisUrl({}), 'redis://127.0.0.1:6379');
  t.equal(testRedisUrl({ POSTERN_TEST_REDIS_URL: 'redis://127.0.0.1:6379/7' }), 'redis://127.0.0.1:6379/7');
  t.equal(testRedisUrl({ POSTERN_TEST_REDIS_URL: 'rediss://cache.test:6380/2' }), 'rediss://cache.test:6380/2');
  for (const bad of ['http://127.0.0.1:6379', '127.0.0.1:6379', 'not a url']) {
    t.throws(() => testRedisUrl({ POSTERN_TEST_REDIS_URL: bad }), /POSTERN_TEST_REDIS_URL must be/, bad);
  }
});

const admin = process.env.POSTERN_TEST_DATABASE_URL;
t.test('two prefixes do not see each other’s databases', { skip: !admin && 'needs POSTERN_TEST_DATABASE_URL' }, async (t) => {
  const outer = testDatabasePrefix();
  const inner = `${outer}${testDatabaseName('').slice(0, 6)}_`;
  const a = await freshPostgres({ prefix: outer });
  t.teardown(a.drop);
  const b = await freshPostgres({ prefix: inner });
  t.teardown(b.drop);
  t.ok(b.name.startsWith(outer), 'one prefix starts the other');

  const ofOuter = await testDatabasesOf(admin!, outer);
  const ofInner = await testDatabasesOf(admin!, inner);
  t.ok(ofOuter.includes(a.name), 'the outer prefix sees its database');
  t.notOk(ofOuter.includes(b.name), "and not the inner prefix's");
  t.same(ofInner, [b.name], 'the inner prefix sees only its own');

  await a.drop();
  await b.drop();
  t.notOk((await testDatabasesOf(admin!, outer)).includes(a.name), 'dropped');
  t.same(await testDatabasesOf(admin!, inner), []);
});
