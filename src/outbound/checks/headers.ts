// The headers check of a message, as Gmail's and Yahoo's sender rules (2024) and RFC 5322 ask
// them: one From with an address, a Date, a Message-ID, a DKIM signature whose d= aligns with the
// From domain (DMARC's relaxed alignment), and for bulk mail a List-Unsubscribe with an https URL
// and List-Unsubscribe-Post for one-click unsubscription (RFC 8058).

export type ItemStatus = 'pass' | 'warn' | 'fail';

export interface HeaderItem {
  header: 'From' | 'Date' | 'Message-ID' | 'DKIM-Signature' | 'List-Unsubscribe';
  status: ItemStatus;
  detail: string;
}

/** The header fields of a MIME source, unfolded, in order (names as written). */
export function headerFields(raw: Buffer | string): [string, string][] {
  const text = typeof raw === 'string' ? raw : raw.toString('utf8');
  const end = text.search(/\r?\n\r?\n/);
  const block = (end < 0 ? text : text.slice(0, end)).replace(/\r?\n[ \t]+/g, ' ');
  const out: [string, string][] = [];
  for (const line of block.split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0) out.push([line.slice(0, i).trim(), line.slice(i + 1).trim()]);
  }
  return out;
}

const domainOfAddress = (v: string): string | null => {
  const m = /<[^<>@\s]+@([^<>\s]+)>\s*$/.exec(v) ?? /(?:^|\s)[^<>@\s]+@([^<>\s]+)\s*$/.exec(v);
  return m ? m[1].toLowerCase() : null;
};

const aligned = (from: string, d: string) => from === d || from.endsWith(`.${d}`) || d.endsWith(`.${from}`);

/** The items of the check; `bulk` says why List-Unsubscribe is required, or null when it is not. */
export function checkHeaders(fields: [string, string][], bulk: string | null): HeaderItem[] {
  const all = (name: string) => fields.filter(([n]) => n.toLowerCase() === name.toLowerCase()).map(([, v]) => v);
  const items: HeaderItem[] = [];

  const froms = all('From');
  const fromDomain = froms.length === 1 ? domainOfAddress(froms[0]) : null;
  if (froms.length === 0) items.push({ header: 'From', status: 'fail', detail: 'no From header' });
  else if (froms.length > 1) items.push({ header: 'From', status: 'fail', detail: `${froms.length} From headers; exactly one is allowed` });
  else if (!fromDomain) items.push({ header: 'From', status: 'fail', detail: `From has no address: ${froms[0]}` });
  else items.push({ header: 'From', status: 'pass', detail: froms[0] });

  const dates = all('Date');
  if (dates.length !== 1)
    items.push({ header: 'Date', status: 'fail', detail: dates.length ? `${dates.length} Date headers` : 'no Date header' });
  else if (Number.isNaN(Date.parse(dates[0]))) items.push({ header: 'Date', status: 'fail', detail: `not a date: ${dates[0]}` });
  else items.push({ header: 'Date', status: 'pass', detail: dates[0] });

  const ids = all('Message-ID');
  if (ids.length !== 1)
    items.push({ header: 'Message-ID', status: 'fail', detail: ids.length ? `${ids.length} Message-ID headers` : 'no Message-ID header' });
  else if (!/^<[^<>@\s]+@[^<>@\s]+>$/.test(ids[0])) items.push({ header: 'Message-ID', status: 'fail', detail: `malformed: ${ids[0]}` });
  else items.push({ header: 'Message-ID', status: 'pass', detail: ids[0] });

  const signatures = all('DKIM-Signature');
  const ds = signatures.map((s) => /(?:^|;)\s*d\s*=\s*([^;\s]+)/.exec(s)?.[1].toLowerCase()).filter((d): d is string => !!d);
  if (signatures.length === 0)
    items.push({ header: 'DKIM-Signature', status: 'fail', detail: 'not signed: no verified sending domain signs this From' });
  else if (fromDomain && !ds.some((d) => aligned(fromDomain, d)))
    items.push({
      header: 'DKIM-Signature',
      status: 'warn',
      detail: `signed by ${ds.join(', ')}, not aligned with the From domain ${fromDomain}`,
    });
  else items.push({ header: 'DKIM-Signature', status: 'pass', detail: `signed by ${ds.join(', ')}` });

  const unsubscribe = all('List-Unsubscribe')[0];
  const oneClick = all('List-Unsubscribe-Post').some((v) => /^List-Unsubscribe=One-Click$/i.test(v));
  const https = unsubscribe ? /<https:\/\/[^>]+>/i.test(unsubscribe) : false;
  if (bulk === null)
    items.push({
      header: 'List-Unsubscribe',
      status: 'pass',
      detail: unsubscribe ? `present: ${unsubscribe}` : 'not required: not bulk mail',
    });
  else if (!unsubscribe) items.push({ header: 'List-Unsubscribe', status: 'fail', detail: `missing; required of bulk mail (${bulk})` });
  else if (!https || !oneClick)
    items.push({
      header: 'List-Unsubscribe',
      status: 'fail',
      detail: `${!https ? 'no https URL' : 'no List-Unsubscribe-Post: List-Unsubscribe=One-Click'}; bulk mail (${bulk}) needs one-click unsubscription (RFC 8058)`,
    });
  else items.push({ header: 'List-Unsubscribe', status: 'pass', detail: `one-click: ${unsubscribe}` });
  return items;
}
