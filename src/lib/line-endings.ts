// Line endings in bytes that must hold CRLF only: SMTP's DATA (RFC 5321 2.3.8) and a body read back
// from its stored source.

/** Index of the first LF not preceded by CR or CR not followed by LF, or -1. */
export function findBareLineEnding(buf: Uint8Array): number {
  for (let i = buf.indexOf(0x0a); i !== -1; i = buf.indexOf(0x0a, i + 1)) {
    if (i === 0 || buf[i - 1] !== 0x0d) return i;
  }
  for (let i = buf.indexOf(0x0d); i !== -1; i = buf.indexOf(0x0d, i + 1)) {
    if (i === buf.length - 1 || buf[i + 1] !== 0x0a) return i;
  }
  return -1;
}
