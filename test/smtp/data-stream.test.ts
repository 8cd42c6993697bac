// smtp-server's DATA reader with the line-starting dots found by indexOf (smtp/data-stream.ts) reads
// exactly what smtp-server's own reads: two real SMTPStream instances, one with each method, are
// fed the same generated sessions (messages with dot-stuffed lines, terminator look-alikes, bare
// LFs, a terminator first, commands pipelined after the message) cut at generated places, and must
// hand over the same message, byte count and commands after it.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { SMTPStream } from 'smtp-server/lib/smtp-stream';
import { feedDataStream, installDataStream, ownFeedDataStream, type DataStreamState } from '../../src/smtp/data-stream.js';
import { cutAt, holds } from '../helpers/property.js';

interface Stream extends DataStreamState {
  oncommand(command: Buffer, callback: () => void): void;
  startDataMode(): NodeJS.ReadWriteStream & { byteLength: number };
  continue(): void;
  write(chunk: Buffer, callback: () => void): boolean;
  end(callback: () => void): void;
}

/** What a stream reading with `feed` hands over for these chunks: each message (and its byte count), each command. */
async function read(feed: DataStreamState['_feedDataStream'], chunks: Buffer[]) {
  const s = new SMTPStream() as unknown as Stream;
  s._feedDataStream = feed;
  const seen: string[] = [];
  s.oncommand = (command, callback) => {
    const line = command.toString('latin1');
    seen.push(`command ${line}`);
    if (/^DATA$/i.test(line.trim())) {
      const message = s.startDataMode();
      const parts: Buffer[] = [];
      message.on('data', (b: Buffer) => parts.push(b));
      message.on('end', () => {
        seen.push(`message ${Buffer.concat(parts).toString('latin1')} (${message.byteLength})`);
        // Later, as smtp-server's connection does once the message is taken: a continue() inside
        // the end of one message would be cleared by the continue() that ended the one before.
        setImmediate(() => s.continue());
      });
    }
    callback();
  };
  for (const c of chunks) await new Promise<void>((resolve) => s.write(c, () => resolve()));
  await new Promise<void>((resolve) => s.end(() => resolve()));
  return seen;
}

const LINES = ['Subject: hi', '', 'text', '.', '..', '...', '.x', '..x', ' .', 'a.', '.\n', 'x\n.', '\r', 'QUJD'.repeat(20)];
const message = fc.array(fc.constantFrom(...LINES), { maxLength: 30 }).map((lines) => lines.map((l) => `${l}\r\n`).join(''));
// One message a session: a client sends nothing after DATA until the 354, so a message and the
// next one's data never share a chunk; commands may follow the terminator at once (RFC 2920).
const session = fc
  .tuple(message, fc.constantFrom('QUIT\r\n', 'RSET\r\nQUIT\r\n', 'MAIL FROM:<a@b.example>\r\nRCPT TO:<c@d.example>\r\nQUIT\r\n'))
  .map(([m, after]) => Buffer.from(`DATA\r\n${m}.\r\n${after}`, 'latin1'));

t.test('installed over the smtp-server it was written from', async (t) => {
  t.ok(installDataStream(), 'the installed smtp-server has the method this was written from');
});

t.test('the same messages as smtp-server, on the shapes that matter', async (t) => {
  const sessions = [
    'DATA\r\n.\r\nQUIT\r\n',
    'DATA\r\n..\r\n.\r\nQUIT\r\n',
    'DATA\r\n..x\r\n...\r\nend\r\n.\r\nQUIT\r\n',
    'DATA\r\nQUJD\r\nQUJD\r\n.\r\nMAIL FROM:<a@b.example>\r\nQUIT\r\n',
    'DATA\r\n.x\r\n.\r\nQUIT\r\n',
    'DATA\r\na\n.\r\nb\r\n.\r\nQUIT\r\n',
    `DATA\r\n${'QUJD'.repeat(20000)}\r\n.\r\nQUIT\r\n`,
  ];
  for (const text of sessions) {
    const bytes = Buffer.from(text, 'latin1');
    for (const sizes of [[bytes.length], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [7, 3, 5], [9, 2, 2, 2]]) {
      const chunks = cutAt(bytes, sizes);
      t.same(
        await read(feedDataStream, chunks),
        await read(ownFeedDataStream, chunks),
        `${JSON.stringify(text.slice(0, 40))} in ${sizes.join(', ')}`,
      );
    }
  }
});

t.test('the same messages as smtp-server, on generated sessions cut at generated places', async (t) => {
  await holds(
    t,
    'messages, byte counts and commands',
    fc.asyncProperty(session, fc.array(fc.integer({ min: 1, max: 120 }), { maxLength: 12 }), async (bytes, sizes) => {
      const chunks = cutAt(bytes, sizes);
      assert.deepStrictEqual(await read(feedDataStream, chunks), await read(ownFeedDataStream, chunks));
    }),
    500,
  );
});
