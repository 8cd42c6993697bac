// Durations in config are short strings (500ms, 5s, 30m, 10h, 5d) so schedules read as the docs state them.

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds of a duration string such as `5s` or `10h`; throws on anything else. */
export function parseDuration(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!m) throw new Error(`not a duration: ${text}`);
  return Number(m[1]) * UNIT_MS[m[2]];
}
