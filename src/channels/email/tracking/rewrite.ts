// Adds open and click tracking to an html body: every absolute http(s) link in an <a href> is
// replaced by a click-redirect URL carrying that link signed, and a 1×1 pixel is appended before
// </body>. mailto:, tel:, anchors and the unsubscribe link are left alone.
export interface TrackingUrls {
  open: string;
  click(url: string): string;
  /** Links never rewritten (the unsubscribe URL). */
  skip?: string[];
}

const decodeEntities = (s: string) =>
  s
    .replace(/&amp;/g, '&')
    .replace(/&#38;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");
const encodeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;');

export function addTracking(html: string, urls: TrackingUrls): string {
  const rewritten = html.replace(/(<a\b[^>]*?\bhref\s*=\s*)("([^"]*)"|'([^']*)')/gi, (whole, pre: string, _q, dq?: string, sq?: string) => {
    const href = decodeEntities((dq ?? sq ?? '').trim());
    if (!/^https?:\/\//i.test(href) || urls.skip?.includes(href)) return whole;
    return `${pre}"${encodeAttr(urls.click(href))}"`;
  });
  const pixel = `<img src="${encodeAttr(urls.open)}" width="1" height="1" alt="" style="display:block;border:0;width:1px;height:1px" />`;
  const close = rewritten.search(/<\/body\s*>/i);
  return close >= 0 ? rewritten.slice(0, close) + pixel + rewritten.slice(close) : rewritten + pixel;
}
