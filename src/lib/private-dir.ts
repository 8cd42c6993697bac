// Directories that hold keys or mail are made 0700 by the process that creates them, whatever the
// umask it was started with (a shell's 022, a container's 000): the files inside are 0600 too, but
// a readable directory still tells anyone what it holds. A directory that already exists keeps the
// mode its owner gave it.
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
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

/**
 * What to do about a path this process was refused (EACCES, EPERM): whose it is, or whose the
 * nearest existing parent it would be made in is, against the uid Postern runs as, and the two
 * ways out. A bind-mounted `/data` owned by the host's user is the usual case: the image runs as
 * uid 10025. Empty when the owner cannot be read, or on a platform without uids.
 */
export function ownershipAdvice(target: string): string {
  const uid = process.getuid?.();
  const gid = process.getgid?.();
  if (uid === undefined || gid === undefined) return '';
  let at = path.resolve(target);
  while (!existsSync(at) && path.dirname(at) !== at) at = path.dirname(at);
  let owner: { uid: number; gid: number };
  try {
    owner = statSync(at);
  } catch {
    return '';
  }
  const wanted = path.resolve(target);
  if (owner.uid === uid) return ` (uid ${uid}, the owner of ${at}): give the owner write access, chmod u+rwx ${at}`;
  if (at !== wanted) {
    // Missing, in a parent Postern may not write: make it for Postern rather than give the parent away.
    return ` (uid ${uid}; ${at} is owned by uid ${owner.uid}): make it for Postern, mkdir -p ${wanted} && chown ${uid}:${gid} ${wanted}`;
  }
  // Running as root to match a root-owned directory is not advice worth giving.
  const asOwner = owner.uid === 0 ? '' : `, or run Postern as its owner (docker run --user ${owner.uid}:${owner.gid})`;
  return ` (uid ${uid}; ${at} is owned by uid ${owner.uid}): give it to Postern, chown ${uid}:${gid} ${at}${asOwner}`;
}
