// The HTML compatibility report of a message: which CSS properties, at-rules, HTML elements and
// attributes its HTML uses that some email client does not support, or supports in part, after the
// caniemail.com data set (config/caniemail/caniemail.json, trimmed from the `caniemail` package's
// data by config/caniemail/trim.mjs; MIT, its LICENSE beside it). The package itself needs Node 22,
// so its data is vendored and read here. Each client counts by its most recent test result.
// Features every client supports are not listed; selectors, units and CSS functions are not looked for.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface DataFeature {
  slug: string;
  title: string;
  category: 'css' | 'html';
  keywords: string;
  url: string;
  /** `family/platform` → the latest result: `y`, `n`, `a` (partial), `u` (unknown), with `#n` note marks. */
  support: Record<string, string>;
  notes?: Record<string, string>;
}

interface Data {
  lastUpdate: string;
  family: Record<string, string>;
  platform: Record<string, string>;
  features: DataFeature[];
}

export interface ClientSupport {
  /** "Outlook Windows", "Gmail Android". */
  client: string;
  support: 'unsupported' | 'partial';
  note?: string;
}

export interface CompatFinding {
  /** The caniemail feature, e.g. `css-display-flex`, `html-video`. */
  feature: string;
  title: string;
  kind: 'css' | 'html';
  url: string;
  /** What in the message uses it, as written (`display:flex`, `<video>`, `@media`), at most 5. */
  found: string[];
  clients: ClientSupport[];
}

export interface CompatReport {
  /** When the caniemail data was last updated. */
  dataUpdated: string;
  findings: CompatFinding[];
}

const dataPath = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'config', 'caniemail', 'caniemail.json');

interface Index {
  data: Data;
  /** Property name → feature. */
  property: Map<string, DataFeature>;
  /** `property:value` → feature (display:flex). */
  propertyValue: Map<string, DataFeature>;
  atRule: Map<string, DataFeature>;
  /** Media feature name (prefers-color-scheme) → feature. */
  mediaFeature: Map<string, DataFeature>;
  element: Map<string, DataFeature>;
  /** `input[type=checkbox]` style: `element type` → feature. */
  elementType: Map<string, DataFeature>;
  attribute: Map<string, DataFeature>;
}

let index: Index | null = null;

const PROPERTY = /^[a-z]+(-[a-z]+)*$/;

/** Reads the data once, at the first check (an idle daemon never reads it). */
function loadIndex(): Index {
  if (index) return index;
  const data = JSON.parse(readFileSync(dataPath, 'utf8')) as Data;
  const ix: Index = {
    data,
    property: new Map(),
    propertyValue: new Map(),
    atRule: new Map(),
    mediaFeature: new Map(),
    element: new Map(),
    elementType: new Map(),
    attribute: new Map(),
  };
  const keywordProperties: [string, DataFeature][] = [];
  for (const f of data.features) {
    const title = f.title.trim();
    if (f.category === 'css') {
      const pv = /^([a-z-]+):\s*([a-z-]+)$/.exec(title);
      const media = /^@media \(([a-z-]+)\)/.exec(title);
      if (pv) ix.propertyValue.set(`${pv[1]}:${pv[2]}`, f);
      else if (media) ix.mediaFeature.set(media[1], f);
      else if (/^@[a-z-]+$/.test(title)) ix.atRule.set(title.slice(1), f);
      else if (/^(at|pseudo|selector|unit|function)-/.test(f.slug.slice(4))) continue;
      else {
        const named = title.replace(/ (CSS )?property$/, '');
        const parts = named.split(/\s*,\s*|\s*&\s*/).map((p) => p.trim());
        if (parts.every((p) => PROPERTY.test(p))) for (const p of parts) ix.property.set(p, f);
        for (const k of f.keywords.split(',').map((k) => k.trim())) if (k.includes('-') && PROPERTY.test(k)) keywordProperties.push([k, f]);
      }
    } else {
      const element = /^<([a-z0-9]+)>( element)?$/.exec(title);
      const typed = /^<([a-z]+) type="([a-z]+)"> element$/.exec(title);
      const attribute = /^([a-z-]+) attribute$/.exec(title);
      if (element) ix.element.set(element[1], f);
      else if (typed) ix.elementType.set(`${typed[1]} ${typed[2]}`, f);
      else if (attribute) ix.attribute.set(attribute[1], f);
      else if (f.slug === 'html-svg') ix.element.set('svg', f);
      else if (f.slug === 'html-srcset') for (const a of ['srcset', 'sizes']) ix.attribute.set(a, f);
      else if (f.slug === 'html-image-maps') for (const e of ['map', 'area']) ix.element.set(e, f);
      else if (f.slug === 'html-lists') for (const e of ['ul', 'ol', 'dl']) ix.element.set(e, f);
      else if (f.slug === 'html-h1-h6') for (const e of ['h1', 'h2', 'h3', 'h4', 'h5', 'h6']) ix.element.set(e, f);
      else if (f.slug === 'html-semantics') for (const k of f.keywords.split(',')) ix.element.set(k.trim(), f);
    }
  }
  // A keyword names a property only where no feature is titled after it (border-top → border).
  for (const [k, f] of keywordProperties) if (!ix.property.has(k)) ix.property.set(k, f);
  index = ix;
  return ix;
}

const TAG = /<([a-zA-Z][a-zA-Z0-9-]*)(\s(?:[^>"']|"[^"]*"|'[^']*')*)?\/?>/g;
const ATTRIBUTE = /([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+)))?/g;

function attributesOf(text: string): [string, string][] {
  const out: [string, string][] = [];
  for (const m of text.matchAll(ATTRIBUTE)) out.push([m[1].toLowerCase(), m[2] ?? m[3] ?? m[4] ?? '']);
  return out;
}

/** `prop: value` pairs of a declaration list. */
function declarations(text: string): [string, string][] {
  const out: [string, string][] = [];
  for (const d of text.split(';')) {
    const i = d.indexOf(':');
    if (i < 0) continue;
    const prop = d.slice(0, i).trim().toLowerCase();
    if (PROPERTY.test(prop))
      out.push([
        prop,
        d
          .slice(i + 1)
          .trim()
          .toLowerCase(),
      ]);
  }
  return out;
}

/** The compatibility findings of an HTML body. */
export function htmlCompatibility(html: string): CompatReport {
  const ix = loadIndex();
  const found = new Map<DataFeature, Set<string>>();
  const use = (f: DataFeature | undefined, what: string) => {
    if (!f) return;
    let s = found.get(f);
    if (!s) found.set(f, (s = new Set()));
    if (s.size < 5) s.add(what);
  };
  const declare = (prop: string, value: string) => {
    const first =
      value
        .replace(/!important/, '')
        .trim()
        .split(/\s+/)[0] ?? '';
    const special = ix.propertyValue.get(`${prop}:${first}`);
    if (special) use(special, `${prop}:${first}`);
    else use(ix.property.get(prop), prop);
  };
  const body = html.replace(/<!--[\s\S]*?-->/g, '');
  for (const m of body.matchAll(/<style\b[^>]*>([\s\S]*?)<\/style>/gi)) {
    const css = m[1].replace(/\/\*[\s\S]*?\*\//g, '');
    for (const at of css.matchAll(/@([a-z-]+)([^{;]*)/gi)) {
      const name = at[1].toLowerCase();
      use(ix.atRule.get(name), `@${name}`);
      if (name === 'media')
        for (const mf of at[2].matchAll(/\(\s*([a-z-]+)/gi)) use(ix.mediaFeature.get(mf[1].toLowerCase()), `@media (${mf[1]})`);
    }
    for (const block of css.matchAll(/\{([^{}]*)\}/g)) for (const [p, v] of declarations(block[1])) declare(p, v);
  }
  for (const m of body.replace(/<style\b[^>]*>[\s\S]*?<\/style>/gi, '').matchAll(TAG)) {
    const tag = m[1].toLowerCase();
    const attributes = attributesOf(m[2] ?? '');
    const type = attributes.find(([a]) => a === 'type')?.[1].toLowerCase();
    const typed = type ? ix.elementType.get(`${tag} ${type}`) : undefined;
    if (typed) use(typed, `<${tag} type="${type}">`);
    else use(ix.element.get(tag), `<${tag}>`);
    for (const [name, value] of attributes) {
      if (name === 'style') for (const [p, v] of declarations(value)) declare(p, v);
      else use(ix.attribute.get(name), `${name}=""`);
    }
  }
  const findings: CompatFinding[] = [];
  for (const [f, what] of found) {
    const clients = clientsOf(ix.data, f);
    if (clients.length === 0) continue;
    findings.push({ feature: f.slug, title: f.title, kind: f.category, url: f.url, found: [...what], clients });
  }
  findings.sort((a, b) => b.clients.length - a.clients.length || a.feature.localeCompare(b.feature));
  return { dataUpdated: ix.data.lastUpdate, findings };
}

function clientsOf(data: Data, f: DataFeature): ClientSupport[] {
  const out: ClientSupport[] = [];
  for (const [key, value] of Object.entries(f.support)) {
    const support = value.startsWith('n') ? 'unsupported' : value.startsWith('a') ? 'partial' : null;
    if (!support) continue;
    const [family, platform] = key.split('/');
    const client = `${data.family[family] ?? family} ${data.platform[platform] ?? platform}`;
    const note = [...value.matchAll(/#(\d+)/g)]
      .map((n) => f.notes?.[n[1]])
      .filter(Boolean)
      .join(' ');
    out.push({ client, support, ...(note ? { note } : {}) });
  }
  return out;
}
