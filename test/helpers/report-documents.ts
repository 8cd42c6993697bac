// A report document read whole, as the tests check what was read: the daemon streams reports
// (reports/unpack.ts's openReport, the DmarcReader fed piece by piece) and never holds one whole.
import type { DmarcHead, DmarcRecord } from '../../src/reports/dmarc.js';
import { DmarcReader } from '../../src/reports/dmarc-reader.js';
import { openReport, type Unpacked } from '../../src/reports/unpack.js';

/** A DMARC report document read at once. */
export function parseDmarcReport(xml: string): DmarcHead & { records: DmarcRecord[]; partial: boolean } {
  const reader = new DmarcReader();
  reader.feed(xml);
  reader.end();
  reader.resume();
  return { ...reader.head!, records: reader.take(), partial: reader.partial };
}

/** The whole report document in an attachment, in one piece. */
export async function unpackReport(content: Buffer): Promise<Unpacked> {
  const { format, pieces } = await openReport(content);
  const all: Buffer[] = [];
  for await (const piece of pieces) all.push(piece);
  return { format, text: Buffer.concat(all).toString('utf8') };
}
