// The API description, open to anyone (no API key: it says what the API is, not what a workspace
// holds): GET /v1/openapi.json, built once from the operation registry (http/openapi/), and
// GET /docs, a reference page drawn by Swagger UI from the copy bundled in node_modules
// (swagger-ui-dist, pinned), never from a CDN. The page's policy allows scripts, styles and
// fetches from this origin only; Swagger UI's call to an online validator is switched off.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageVersion } from '../../lib/version.js';
import { Router, type Response } from 'express';
import { buildOpenApiDocument } from '../openapi/document.js';

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Postern HTTP API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="api"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
const INIT = `window.ui = SwaggerUIBundle({ url: '/v1/openapi.json', dom_id: '#api', validatorUrl: null, deepLinking: true });\n`;

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

function page(res: Response, type: string, body: string | Buffer): void {
  res.set({ 'content-type': type, 'content-security-policy': CSP, 'x-content-type-options': 'nosniff', 'cache-control': 'no-cache' });
  res.send(body);
}

export function openApiRoutes(): Router {
  const r = Router();
  let document: string | null = null;
  r.get('/v1/openapi.json', (_req, res) => {
    document ??= JSON.stringify(buildOpenApiDocument({ version: packageVersion() }));
    res.type('application/json').send(document);
  });

  const dir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const files = new Map<string, Buffer>();
  r.get('/docs', (_req, res) => page(res, 'text/html; charset=utf-8', PAGE));
  r.get('/docs/init.js', (_req, res) => page(res, 'text/javascript; charset=utf-8', INIT));
  r.get('/docs/:file', (req, res, next) => {
    const type = ASSETS[req.params.file];
    if (!type) return next();
    let body = files.get(req.params.file);
    if (!body) files.set(req.params.file, (body = readFileSync(path.join(dir, req.params.file))));
    page(res, type, body);
  });
  return r;
}
