// The reply a person typed, without the quoted history and signature it drags along. No maintained
// reply parser runs on Node 20 without native parts, so this is a line scanner: it cuts at the first
// marker of quoted history (an attribution line "On … wrote:" in its common languages and clients,
// an Outlook header block, a forwarded/original-message separator, a run of `>` lines) and at the
// standard signature delimiter "-- ". test/inbound/stripped-reply.test.ts holds the corpus, and
// holds the quick tests in front of the expressions (mayHaveMarker, the MAYBE_ gates) to them over
// generated text: each must say yes wherever what it guards would.

/** Attribution lines (exported, as the gates and the separators, for the property test). */
export const ATTRIBUTION = [
  /^on\b.{0,300}\bwrote:?\s*$/i, // Gmail, Apple Mail, Thunderbird (English)
  /^le\b.{0,300}\ba écrit\s*:?\s*$/i, // French
  /^am\b.{0,300}\bschrieb\b.{0,200}:?\s*$/i, // German
  /^el\b.{0,300}\bescribió:?\s*$/i, // Spanish
  /^il\b.{0,300}\bha scritto:?\s*$/i, // Italian
  /^op\b.{0,300}\bschreef\b.{0,200}:?\s*$/i, // Dutch
  /^em\b.{0,300}\bescreveu:?\s*$/i, // Portuguese
  /^\d{4}[-/.]\d{1,2}[-/.]\d{1,2}.{0,200}<[^>]+@[^>]+>:?\s*$/, // "2024-01-02 10:00 GMT+01:00 Name <a@b>:"
  /^.{0,200}<[^>]+@[^>]+>\s+(wrote|a écrit|schrieb|escribió):?\s*$/i,
];

/** Separator lines and client markers. */
export const SEPARATORS = [
  /^-{2,}\s*(original message|forwarded message|ursprüngliche nachricht|message d'origine|mensaje original|messaggio originale)\s*-{2,}\s*$/i,
  /^-{5,}\s*forwarded message\s*-{5,}$/i,
  /^begin forwarded message:?\s*$/i, // Apple Mail
  /^_{20,}\s*$/, // Outlook's rule above the header block
  /^-{3,}\s*reply above this line\s*-{3,}$/i,
  /^##-\s*please type your reply above this line\s*-##$/i,
  /^sent from my (iphone|ipad|android|mobile|blackberry|galaxy|phone)\b.*$/i, // client markers
  /^sent from (outlook|mail) for (ios|android|windows( 10)?)\b.*$/i,
  /^get outlook for (ios|android)\s*$/i,
  /^envoyé de mon (iphone|ipad)\s*$/i,
  /^von meinem (iphone|ipad) gesendet\s*$/i,
];

/** The first line of an Outlook header block. */
export const OUTLOOK_FROM = /^\*?(from|von|de|da|van)\s*:\*?\s+\S/i;

// Outlook quotes with a header block: "From: …" followed within a few lines by Sent:/Date: and Subject:.
function isOutlookHeaderBlock(lines: string[], i: number): boolean {
  if (!OUTLOOK_FROM.test(lines[i])) return false;
  const next = lines.slice(i + 1, i + 6).join('\n');
  return (
    /^\*?(sent|date|gesendet|envoyé|enviado|inviato|datum|verzonden)\s*:/im.test(next) &&
    /^\*?(subject|betreff|objet|asunto|oggetto|onderwerp)\s*:/im.test(next)
  );
}

// Cheap tests that rule a line out before the regular expressions above run (long bodies have
// thousands of lines; only a few can be markers).
export const MAYBE_ATTRIBUTION = /[:>]\s*$|wrote|écrit|schrieb|escribió|scritto|schreef|escreveu/i;
export const MAYBE_SEPARATOR = /^[-_#]|^(begin|sent|get|envoy|von)\b/i;
export const MAYBE_HEADER = /^\*?(from|von|de|da|van)\s*:/i;

/**
 * The reply of text that quotes nothing: the text itself with its line ends made `\n` and its ends
 * trimmed. The `parsed` column leaves the stripped reply out when it is this (most mail), and the
 * reader derives it again.
 */
export function unquotedReply(text: string): string {
  return text.replace(/\r\n?/g, '\n').trim();
}

// Whether the tests above could find a marker anywhere in the text: a superset of them (it may
// answer yes where nothing is cut, never no where something would be). Most mail has none, and its
// reply is then the whole text, without splitting a long body into lines. Plain searches (indexOf
// runs many times faster than a regular expression over 100 KiB) and one walk over the line
// starts: a line whose first character after white space may begin a separator, the signature
// delimiter or a client marker.
const MAYBE_WORDS = /wrote|écrit|schrieb|escribió|scritto|schreef|escreveu/i; // attributions (one may end in no colon)
const MARKER_WORD_AT = /begin|sent|get|envoy|von/iy;

/** White space as `\s` has it in a regular expression. */
const isSpace = (c: number): boolean => c === 0x20 || (c >= 0x09 && c <= 0x0d) || (c > 0x7f && /\s/.test(String.fromCharCode(c)));

export function mayHaveMarker(text: string): boolean {
  // Header blocks, quoted lines and attributions ending in ':' or '<address>'; a CR, which the
  // scanner takes for a line end as well.
  if (text.includes(':') || text.includes('>') || text.includes('\r') || MAYBE_WORDS.test(text)) return true;
  for (let at = 0; at < text.length;) {
    while (at < text.length && isSpace(text.charCodeAt(at))) at++;
    if (at === text.length) return false;
    const c = text.charCodeAt(at);
    if (c === 0x2d || c === 0x5f || c === 0x23) return true; // - _ #
    MARKER_WORD_AT.lastIndex = at;
    if (MARKER_WORD_AT.test(text)) return true;
    const next = text.indexOf('\n', at);
    if (next === -1) return false;
    at = next + 1;
  }
  return false;
}

/** The reply without quoted history and signature; null when that is the whole text (unquotedReply of it). */
export function strippedReply(text: string): string | null {
  return mayHaveMarker(text) ? scanReply(text) : null;
}

/** The scanner behind strippedReply, without the quick test in front of it (which must not change its answer). */
export function scanReply(text: string): string | null {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  // quotedFrom[i]: every line from i on is quoted or blank.
  const quotedFrom = new Array<boolean>(lines.length + 1);
  quotedFrom[lines.length] = true;
  for (let i = lines.length - 1; i >= 0; i--) quotedFrom[i] = quotedFrom[i + 1] && (/^\s*>/.test(lines[i]) || lines[i].trim() === '');
  let end = lines.length;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const trimmed = line.trim();
    if (trimmed === '') continue;
    if (line === '-- ' || line === '--' || trimmed === '-- ') {
      end = i;
      break;
    }
    if (
      (MAYBE_SEPARATOR.test(trimmed) && SEPARATORS.some((re) => re.test(trimmed))) ||
      (MAYBE_HEADER.test(trimmed) && isOutlookHeaderBlock(lines, i))
    ) {
      end = i;
      break;
    }
    if (MAYBE_ATTRIBUTION.test(trimmed) && ATTRIBUTION.some((re) => re.test(trimmed))) {
      end = i;
      break;
    }
    // An attribution may wrap onto a second line ("On Mon, … Name <x@y>\nwrote:").
    if (
      /^on\b/i.test(trimmed) &&
      /^wrote:?\s*$/i.test(lines[i + 1]?.trim() ?? '') &&
      ATTRIBUTION[0].test(`${trimmed} ${lines[i + 1].trim()}`)
    ) {
      end = i;
      break;
    }
    // A quoted block: a `>` line where everything after it is quoted or blank.
    if (/^\s*>/.test(line) && quotedFrom[i]) {
      end = i;
      break;
    }
  }
  // Drop remaining interleaved quoted lines (top-posting with inline quotes is rare; bottom lines go).
  const kept = lines.slice(0, end).filter((l) => !/^\s*>/.test(l));
  return kept.length === lines.length ? null : kept.join('\n').trim();
}
