// Directories that hold keys or mail are made 0700 by the process that creates them, whatever the
// umask it was started with (a shell's 022, a container's 000): the files inside are 0600 too, but
// a readable directory still tells anyone what it holds. A directory that already exists keeps the
// mode its owner gave it.
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';

/** Makes `dir` (and its missing parents) 0700 when this process creates it, whatever the umask. */
export function privateDirectory(dir: string): void {
  const missing: string[] = [];
  for (let d = path.resolve(dir); !existsSync(d); d = path.dirname(d)) missing.unshift(d);
  for (const d of missing) {
    try {
      mkdirSync(d, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    chmodSync(d, 0o700);
  }
}
