// The dashboard's files: the page (index.html, the same for every dashboard path, so a reload of
// /dashboard/messages/msg_… works) and the hashed, precompressed bundle the build writes to
// dist/ui. Everything comes from the package; nothing is fetched from elsewhere.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Request, RequestHandler, Response } from 'express';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

interface Asset {
  type: string;
  body: Buffer;
  gzip?: Buffer;
  br?: Buffer;
}

/** The folder the build writes the bundle to: `dist/ui` of the package this file belongs to. */
function uiDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return path.join(dir, 'dist', 'ui');
}

function load(dir: string): { index: Buffer | null; assets: Map<string, Asset> } {
  const assets = new Map<string, Asset>();
  if (!existsSync(path.join(dir, 'index.html'))) return { index: null, assets };
  const files = existsSync(path.join(dir, 'assets')) ? readdirSync(path.join(dir, 'assets')) : [];
  for (const name of files) {
    const type = TYPES[path.extname(name)];
    if (!type) continue;
    const file = path.join(dir, 'assets', name);
    const asset: Asset = { type, body: readFileSync(file) };
    if (existsSync(`${file}.gz`)) asset.gzip = readFileSync(`${file}.gz`);
    if (existsSync(`${file}.br`)) asset.br = readFileSync(`${file}.br`);
    assets.set(name, asset);
  }
  return { index: readFileSync(path.join(dir, 'index.html')), assets };
}

function sendCompressed(req: Request, res: Response, asset: Asset): void {
  const accepts = String(req.headers['accept-encoding'] ?? '');
  res.setHeader('Vary', 'Accept-Encoding');
  res.setHeader('Content-Type', asset.type);
  if (asset.br && /\bbr\b/.test(accepts)) {
    res.setHeader('Content-Encoding', 'br');
    res.end(asset.br);
  } else if (asset.gzip && /\bgzip\b/.test(accepts)) {
    res.setHeader('Content-Encoding', 'gzip');
    res.end(asset.gzip);
  } else {
    res.end(asset.body);
  }
}

export function dashboardAssets(dir = uiDir()): { page: RequestHandler; asset: RequestHandler } {
  const { index, assets } = load(dir);
  return {
    page: (_req, res) => {
      res.setHeader('Cache-Control', 'no-store');
      if (!index) {
        res.status(503).type('text/plain').send('The dashboard is not built: run npm run build (npm ci does it), then restart.\n');
        return;
      }
      res.type('html').send(index);
    },
    asset: (req, res, next) => {
      const asset = assets.get(String(req.params.name));
      if (!asset) return next();
      // Names carry a content hash: a new build has new names, so these never go stale.
      res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
      sendCompressed(req, res, asset);
    },
  };
}
