/**
 * A 32-bit hash of a string (Java's `String.hashCode`, unsigned): cheap and stable across
 * processes and versions, for spreading names over a few buckets. Not for anything an attacker
 * chooses to collide.
 */
export function stringHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
  return h;
}
