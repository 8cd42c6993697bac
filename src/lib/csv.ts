// Writing CSV (RFC 4180): a field is quoted when it holds a comma, a quote or a line break, its
// quotes doubled. Reading is csv-parse's.

/** One CSV field; null is the empty field. */
export function csvQuote(value: string | null): string {
  const v = value ?? '';
  return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}
