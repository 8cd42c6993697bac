// Rebuilds caniemail.json from the caniemail package's data (the caniemail.com data set):
//   npm pack caniemail@2.0.2 && tar xzf caniemail-2.0.2.tgz
//   node config/caniemail/trim.mjs package/dist/data/caniemail.json > config/caniemail/caniemail.json
// It keeps what the HTML check reads: the CSS and HTML features, and for each email client and
// platform only its most recent test result (the package lists every version tested, oldest first).
import { readFileSync } from 'node:fs';

const full = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const features = full.data
  .filter((f) => f.category === 'css' || f.category === 'html')
  .map((f) => {
    const support = {};
    const used = new Set();
    for (const [family, platforms] of Object.entries(f.stats)) {
      for (const [platform, versions] of Object.entries(platforms)) {
        const latest = Object.values(versions).at(-1);
        support[`${family}/${platform}`] = latest;
        for (const n of latest.matchAll(/#(\d+)/g)) used.add(n[1]);
      }
    }
    const notes = Object.fromEntries(Object.entries(f.notes_by_num ?? {}).filter(([n]) => used.has(n)));
    return {
      slug: f.slug,
      title: f.title,
      category: f.category,
      keywords: f.keywords ?? '',
      url: f.url,
      support,
      ...(Object.keys(notes).length ? { notes } : {}),
    };
  });
const out = {
  source: 'caniemail@2.0.2 (npm), data of caniemail.com',
  apiVersion: full.api_version,
  lastUpdate: full.last_update_date,
  family: full.nicenames.family,
  platform: full.nicenames.platform,
  features,
};
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
