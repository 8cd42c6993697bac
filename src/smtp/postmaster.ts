// RFC 5321 4.5.1: an SMTP server MUST accept `RCPT TO:<Postmaster>` without a domain. Postern has
// no one mailbox for it (every other address belongs to a workspace), so such mail goes, by
// default, to the operator: a Maildir at `<dataDir>/postmaster` (written to tmp/, fsynced, renamed
// into new/, as any mail reader expects), read with any mail client or plain tools. With
// `smtp.postmasterAddress` set it is routed to that address instead (listener.ts). The Maildir is
// capped at 100 MiB: past it, RCPT TO:<postmaster> is answered 452 4.2.2 until the operator makes
// room, so a flood cannot fill the disk.
import { randomUUID } from 'node:crypto';
import { mkdir, open, readdir, rename, stat } from 'node:fs/promises';
import path from 'node:path';

export const POSTMASTER_MAX_BYTES = 100 * 1024 * 1024;

export interface PostmasterMailbox {
  readonly dir: string;
  /** Whether the mailbox has reached its cap. */
  full(): Promise<boolean>;
  /** Delivers a message durably; resolves with its file name in new/. */
  deliver(message: Buffer, now: Date): Promise<string>;
}

async function fsyncPath(p: string, flags: string): Promise<void> {
  const h = await open(p, flags);
  try {
    await h.sync();
  } finally {
    await h.close();
  }
}

export function createPostmasterMailbox(opts: { dir: string; hostname: string; maxBytes?: number }): PostmasterMailbox {
  const { dir } = opts;
  const maxBytes = opts.maxBytes ?? POSTMASTER_MAX_BYTES;
  let ready: Promise<void> | null = null;
  // Bytes in the mailbox: counted once, then kept up to date; counted again when it looks full
  // (the operator may have read and removed mail meanwhile).
  let used: number | null = null;

  const prepare = () =>
    (ready ??= (async () => {
      for (const sub of ['tmp', 'new', 'cur']) await mkdir(path.join(dir, sub), { recursive: true, mode: 0o700 });
    })());
  const count = async () => {
    let total = 0;
    for (const sub of ['new', 'cur']) {
      for (const name of await readdir(path.join(dir, sub))) {
        total += await stat(path.join(dir, sub, name)).then(
          (s) => s.size,
          () => 0,
        );
      }
    }
    return total;
  };

  return {
    dir,
    async full() {
      await prepare();
      used ??= await count();
      if (used < maxBytes) return false;
      used = await count();
      return used >= maxBytes;
    },
    async deliver(message, now) {
      await prepare();
      const name = `${Math.floor(now.getTime() / 1000)}.${randomUUID()}.${opts.hostname.replace(/[/:]/g, '_')}`;
      const tmp = path.join(dir, 'tmp', name);
      const h = await open(tmp, 'wx', 0o600);
      try {
        await h.writeFile(message);
        await h.sync();
      } finally {
        await h.close();
      }
      await rename(tmp, path.join(dir, 'new', name));
      await fsyncPath(path.join(dir, 'new'), 'r');
      if (used !== null) used += message.length;
      return name;
    },
  };
}
