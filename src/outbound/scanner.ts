import type { ChannelOutput } from '../contract/channels.js'; // The outbound content scanner: built-in rules from config (`scanner.blockedPhrases`,
// `scanner.blockedPatterns`, `scanner.blockedDomains`) applied to the rendered output. Its verdict
// carries the real reason for the operator's log; the customer only ever sees BLOCKED_NOTICE.

export interface ScanRules {
  blockedPhrases: string[];
  blockedPatterns: string[];
  blockedDomains: string[];
}

export type ScanVerdict = { blocked: false } | { blocked: true; reason: string };

function strings(v: unknown, out: string[]): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) v.forEach((x) => strings(x, out));
  else if (v && typeof v === 'object') Object.values(v).forEach((x) => strings(x, out));
  return out;
}

const URL_HOST = /\b(?:https?:)?\/\/([a-z0-9.-]+)/gi;

export function createScanner(rules: ScanRules): (output: ChannelOutput) => ScanVerdict {
  const phrases = rules.blockedPhrases.map((p) => p.toLowerCase());
  const patterns = rules.blockedPatterns.map((p) => new RegExp(p, 'i'));
  const domains = rules.blockedDomains.map((d) =>
    d
      .toLowerCase()
      .replace(/^\*?\./, '')
      .replace(/\.$/, ''),
  );
  // No rules (the default): nothing to look at, so do not lower-case every rendered field.
  if (phrases.length === 0 && patterns.length === 0 && domains.length === 0) return () => ({ blocked: false });
  return (output) => {
    const texts = strings(output, []);
    for (const text of texts) {
      const lower = text.toLowerCase();
      for (const p of phrases) if (lower.includes(p)) return { blocked: true, reason: `blocked phrase "${p}"` };
      for (const re of patterns) if (re.test(text)) return { blocked: true, reason: `blocked pattern /${re.source}/` };
      if (domains.length) {
        for (const m of text.matchAll(URL_HOST)) {
          const host = m[1].toLowerCase().replace(/\.$/, '');
          const hit = domains.find((d) => host === d || host.endsWith('.' + d));
          if (hit) return { blocked: true, reason: `link to blocked domain ${hit} (${host})` };
        }
      }
    }
    return { blocked: false };
  };
}
