import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { destination } from 'pino';
import t from 'tap';
import { createLogger, writeLine } from '../../src/lib/logger.js';

// The daemon's "ready" line is what supervisors and tests wait for; lines logged before it (the
// first-start keys file, the public URL warning) must come before it in the output. pino's default
// destination writes asynchronously, so a line written to the same fd directly overtakes them.
t.test('writeLine comes after every line logged before it, whatever the level', async (t) => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'postern-log-')), 'out.log');
  const dest = destination({ dest: file, sync: false, minLength: 0 });
  await new Promise((resolve) => dest.once('ready', resolve));
  const log = createLogger('error', dest);
  log.error('first');
  log.error('second');
  writeLine(log, '{"msg":"ready"}');
  const closed = new Promise((resolve) => dest.once('close', resolve));
  dest.end();
  await closed;
  const msgs = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l).msg);
  t.same(msgs, ['first', 'second', 'ready']);
});
