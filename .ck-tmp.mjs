import SQLite from 'better-sqlite3';
import fs from 'node:fs';
for (const ac of [1000, 0]) {
  const f = '/tmp/pi/s/t.db';
  for (const x of ['', '-wal', '-shm'])
    try {
      fs.rmSync(f + x);
    } catch {}
  const db = new SQLite(f);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('wal_autocheckpoint = ' + ac);
  db.exec('create table t (id integer primary key, b blob, p text, e text)');
  const ins = db.prepare('insert into t (b, p, e) values (?, ?, ?)');
  for (const [n, size] of [
    [20, 5120],
    [20, 102400],
  ]) {
    const blob = Buffer.alloc(size, 7);
    const txt = 'x'.repeat(size);
    const R = 100;
    const ts = [];
    for (let r = 0; r < R; r++) {
      const t0 = performance.now();
      db.exec('begin');
      for (let i = 0; i < n; i++) ins.run(blob, txt, txt);
      db.exec('commit');
      ts.push(performance.now() - t0);
    }
    ts.sort((a, b) => a - b);
    console.log(
      `autocheckpoint ${ac} ${n} x ${size}: avg ${(ts.reduce((a, b) => a + b) / R).toFixed(2)} p50 ${ts[R / 2].toFixed(2)} p95 ${ts[(R * 0.95) | 0].toFixed(2)} max ${ts[R - 1].toFixed(2)} ms/commit`,
    );
  }
  db.close();
}
