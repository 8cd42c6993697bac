// How many SMS parts a body takes. A body that fits the GSM 03.38 default alphabet (plus its
// extension table, whose characters cost two septets) is sent as GSM-7: 160 septets in one part,
// 153 per part when concatenated. Anything else is UCS-2: 70 UTF-16 units alone, 67 per part. An
// escape pair or a surrogate pair is never split across parts, as real encoders do.

const GSM_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const GSM_EXTENSION = '\f^{}\\[~]|€';
const basic = new Set(GSM_BASIC);
const extension = new Set(GSM_EXTENSION);

export type SmsEncoding = 'GSM-7' | 'UCS-2';

export interface SegmentCount {
  encoding: SmsEncoding;
  segments: number;
  /** Septets (GSM-7) or UTF-16 code units (UCS-2). */
  units: number;
}

function pack(costs: number[], single: number, multi: number): number {
  const total = costs.reduce((a, b) => a + b, 0);
  if (total <= single) return 1;
  let parts = 1;
  let used = 0;
  for (const c of costs) {
    if (used + c > multi) {
      parts++;
      used = 0;
    }
    used += c;
  }
  return parts;
}

export function countSegments(body: string): SegmentCount {
  const chars = [...body];
  if (chars.every((c) => basic.has(c) || extension.has(c))) {
    const costs = chars.map((c) => (extension.has(c) ? 2 : 1));
    return { encoding: 'GSM-7', segments: pack(costs, 160, 153), units: costs.reduce((a, b) => a + b, 0) };
  }
  const costs = chars.map((c) => c.length);
  return { encoding: 'UCS-2', segments: pack(costs, 70, 67), units: costs.reduce((a, b) => a + b, 0) };
}

/** The timeline note that shows the count on the message. */
export function segmentNote(body: string): string {
  const c = countSegments(body);
  return `sms: ${c.segments} segment${c.segments === 1 ? '' : 's'} (${c.encoding}, ${c.units} ${c.encoding === 'GSM-7' ? 'septets' : 'UTF-16 units'})`;
}
