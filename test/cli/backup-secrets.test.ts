// A backup holds secrets.key (and with it every DKIM key and provider credential): it is written
// 0600, and so are the data directory (0700) and the database files the daemon creates, whatever
// the umask (here 000, the worst a shell or a container can hand over). `--encrypt` seals it with
// a passphrase from a file or the environment; restore opens it with the same one and refuses,
// touching nothing, without it, with a wrong one, or with a file altered since.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { runBin, spawnDaemonIn } from '../helpers/run-bin.js';
import { sqliteOnly } from '../helpers/databases.js';

sqliteOnly('the file modes of the SQLite database and of its backups; a PostgreSQL database is not a file in the data directory');

const mode = (file: string) => statSync(file).mode & 0o777;
const octal = (n: number) => n.toString(8).padStart(4, '0');

const before = process.umask(0);
t.teardown(() => void process.umask(before));

t.test('a data directory, its database and its backups are private; an encrypted backup restores with its passphrase only', async (t) => {
  const root = mkdtempSync(path.join(tmpdir(), 'postern-modes-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dataDir = path.join(root, 'new', 'data');
  const env = { POSTERN_DATA_DIR: dataDir, POSTERN_LOG_LEVEL: 'warn' };

  const bin = await spawnDaemonIn(t, dataDir);
  const sent = await fetch(`http://127.0.0.1:${bin.daemon.http}/v1/send-raw`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bin.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to: 'a@example.com', channel: 'email', content: { subject: 'Hi', text: 'x' } }),
  });
  t.equal(sent.status, 202);
  const { id } = (await sent.json()) as { id: string };

  t.equal(octal(mode(dataDir)), '0700', 'the data directory the daemon made is 0700');
  t.equal(octal(mode(path.join(root, 'new'))), '0700', 'and so is the parent it made');
  for (const name of readdirSync(dataDir, { recursive: true }) as string[]) {
    const file = path.join(dataDir, name);
    t.equal(octal(mode(file)), statSync(file).isDirectory() ? '0700' : '0600', `${name} is private`);
  }
  t.ok(existsSync(path.join(dataDir, 'postern.sqlite-wal')), 'the WAL was among them');

  const backups = path.join(root, 'backups');
  rmSync(backups, { recursive: true, force: true });
  writeFileSync(path.join(root, 'pass'), 'correct horse battery staple\n');
  const plain = path.join(root, 'plain.backup');
  const made = await runBin(['backup', plain], { env });
  t.equal(made.code, 0, made.stderr);
  t.equal(octal(mode(plain)), '0600', 'a plain backup is 0600');
  t.match(JSON.parse(made.stdout), { carried: ['secrets.key'], encrypted: false });

  const sealed = path.join(root, 'sealed.backup');
  const sealedMade = await runBin(['backup', sealed, '--encrypt', '--passphrase-file', path.join(root, 'pass')], { env });
  t.equal(sealedMade.code, 0, sealedMade.stderr);
  t.match(JSON.parse(sealedMade.stdout), { file: sealed, encrypted: true, carried: ['secrets.key'] });
  t.equal(octal(mode(sealed)), '0600', 'an encrypted backup is 0600');
  const bytes = readFileSync(sealed);
  t.equal(bytes.subarray(0, 8).toString('ascii'), 'PSTNBKUP', 'the envelope starts with its magic');
  t.equal(bytes[8], 1, 'format version 1');
  const key = readFileSync(path.join(dataDir, 'secrets.key'), 'utf8').trim();
  t.ok(readFileSync(plain).includes(key), 'the plain backup holds the key in clear');
  t.notOk(bytes.includes(key), 'the encrypted one does not');
  t.notOk(bytes.includes('SQLite format 3'), 'nor anything of the database');

  // No passphrase, or one on the command line: refused before anything is written.
  const none = await runBin(['backup', path.join(root, 'x.backup'), '--encrypt'], { env });
  t.equal(none.code, 2);
  t.match(none.stderr, /--encrypt needs a passphrase: --passphrase-file FILE, or POSTERN_BACKUP_PASSPHRASE/);
  const inline = await runBin(['backup', path.join(root, 'x.backup'), '--encrypt', '--passphrase', 'p'], { env });
  t.equal(inline.code, 2);
  t.notOk(existsSync(path.join(root, 'x.backup')));
  await bin.stop();

  // Restores into a fresh data directory: refused without, or with a wrong, passphrase.
  const fresh = path.join(root, 'fresh');
  const freshEnv = { POSTERN_DATA_DIR: fresh, POSTERN_LOG_LEVEL: 'warn' };
  const withoutPass = await runBin(['restore', sealed], { env: freshEnv });
  t.equal(withoutPass.code, 2);
  t.match(withoutPass.stderr, /sealed\.backup is encrypted: give its passphrase with --passphrase-file FILE or POSTERN_BACKUP_PASSPHRASE/);
  const wrong = await runBin(['restore', sealed], { env: { ...freshEnv, POSTERN_BACKUP_PASSPHRASE: 'wrong horse' } });
  t.equal(wrong.code, 2);
  t.match(wrong.stderr, /cannot decrypt .*sealed\.backup: wrong passphrase, or the file was altered/);
  const altered = path.join(root, 'altered.backup');
  const flipped = Buffer.from(bytes);
  flipped[flipped.length - 100] ^= 1;
  writeFileSync(altered, flipped);
  const tampered = await runBin(['restore', altered], { env: { ...freshEnv, POSTERN_BACKUP_PASSPHRASE: 'correct horse battery staple' } });
  t.equal(tampered.code, 2);
  t.match(tampered.stderr, /wrong passphrase, or the file was altered/);
  t.same(
    readdirSync(fresh).filter((f) => !f.endsWith('.lock')),
    [],
    'nothing but the lock file was put in the data directory',
  );

  const right = await runBin(['restore', sealed], { env: { ...freshEnv, POSTERN_BACKUP_PASSPHRASE: 'correct horse battery staple' } });
  t.equal(right.code, 0, right.stderr);
  t.match(JSON.parse(right.stdout), { restored: ['secrets.key'] });
  t.equal(readFileSync(path.join(fresh, 'secrets.key'), 'utf8').trim(), key);
  t.equal(octal(mode(path.join(fresh, 'postern.sqlite'))), '0600', 'the restored database is 0600');
  t.equal(octal(mode(fresh)), '0700', 'in a 0700 directory');
  // The first start's keys, where the helper reads them (a restored daemon makes no new ones).
  writeFileSync(path.join(fresh, 'bootstrap-keys.txt'), readFileSync(path.join(dataDir, 'bootstrap-keys.txt')));
  const again = await spawnDaemonIn(t, fresh);
  const res = await fetch(`http://127.0.0.1:${again.daemon.http}/v1/messages/${id}`, { headers: { authorization: `Bearer ${bin.key}` } });
  t.equal(res.status, 200, 'the restored daemon has the message, and the old key still works');
});
