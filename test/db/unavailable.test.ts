// Which database errors mean "not there now" (503 / SMTP 421 and a write tried again) rather than
// "this query is wrong" (db/database.ts isDatabaseUnavailable). The real errors are met in
// test/cluster/database-outage.test.ts; this table pins the classification, both ways.
import t from 'tap';
import { isDatabaseUnavailable } from '../../src/db/database.js';

const err = (fields: { code?: string; message?: string }) => Object.assign(new Error(fields.message ?? 'x'), fields);

t.test('unavailable', async (t) => {
  const cases: [string, unknown][] = [
    ['57P01 admin shutdown (a restart)', err({ code: '57P01', message: 'terminating connection due to administrator command' })],
    ['57P03 cannot connect now (starting up)', err({ code: '57P03', message: 'the database system is starting up' })],
    ['53300 too many connections', err({ code: '53300' })],
    ['08006 connection failure', err({ code: '08006' })],
    ['ECONNREFUSED (server down)', err({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' })],
    ['ECONNRESET', err({ code: 'ECONNRESET' })],
    ['pg: Connection terminated unexpectedly', err({ message: 'Connection terminated unexpectedly' })],
    ['pg: not queryable', err({ message: 'Client has encountered a connection error and is not queryable' })],
    ['pg-pool: connect timeout', err({ message: 'timeout exceeded when trying to connect' })],
    ['wrapped as a cause', new Error('write failed', { cause: err({ code: '57P01' }) })],
    ['inside an AggregateError', new AggregateError([new Error('a'), err({ code: 'ECONNREFUSED' })], 'all failed')],
  ];
  for (const [name, e] of cases) t.ok(isDatabaseUnavailable(e), name);
});

t.test('not unavailable: the query or the data is wrong', async (t) => {
  const cases: [string, unknown][] = [
    ['23505 unique violation', err({ code: '23505' })],
    ['42P01 undefined table', err({ code: '42P01', message: 'relation "x" does not exist' })],
    ['40P01 deadlock', err({ code: '40P01' })],
    ['SQLITE_CONSTRAINT_UNIQUE', err({ code: 'SQLITE_CONSTRAINT_UNIQUE' })],
    // Another process holding SQLite's write lock past busy_timeout: a failed transaction (SMTP 451),
    // not the database gone.
    ['SQLite busy past busy_timeout', err({ code: 'SQLITE_BUSY', message: 'database is locked' })],
    ['a TypeError', new TypeError('cannot read properties of undefined')],
    ['a string', 'ECONNREFUSED'],
    ['null', null],
  ];
  for (const [name, e] of cases) t.notOk(isDatabaseUnavailable(e), name);
});
