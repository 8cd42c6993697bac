// Builds the dashboard: one minified, hashed JavaScript bundle and one stylesheet in dist/ui/assets,
// each beside its gzip and brotli forms (the daemon serves what the browser accepts), and
// dist/ui/index.html naming them. Runs in `npm run build` (and so in `npm ci`, through prepare).
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = path.dirname(fileURLToPath(import.meta.url));
const out = path.resolve(root, '..', 'dist', 'ui');
rmSync(out, { recursive: true, force: true });
mkdirSync(path.join(out, 'assets'), { recursive: true });

const result = await build({
  entryPoints: { app: path.join(root, 'src', 'main.tsx') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome110', 'firefox115', 'safari16'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: path.join(out, 'assets'),
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});

const files = Object.keys(result.metafile.outputs).map((f) => path.resolve(f));
let compressed = 0;
for (const file of files) {
  const body = readFileSync(file);
  const gz = gzipSync(body, { level: 9 });
  writeFileSync(`${file}.gz`, gz);
  writeFileSync(`${file}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
  compressed += gz.length;
}
const js = files.find((f) => f.endsWith('.js'));
const css = files.find((f) => f.endsWith('.css'));
const name = (f) => path.basename(f);
writeFileSync(
  path.join(out, 'index.html'),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Postern</title>
<link rel="icon" href="data:,">
${css ? `<link rel="stylesheet" href="/dashboard/assets/${name(css)}">` : ''}
<script type="module" src="/dashboard/assets/${name(js)}"></script>
</head>
<body><div id="app"></div><noscript>The Postern dashboard needs JavaScript.</noscript></body>
</html>
`,
);
writeFileSync(path.join(out, 'sizes.json'), JSON.stringify({ gzipBytes: compressed, files: files.map(name) }, null, 2));
if (!process.argv.includes('--quiet')) console.log(`dashboard: ${files.map(name).join(', ')} (${(compressed / 1024).toFixed(1)} KiB gzip)`);
