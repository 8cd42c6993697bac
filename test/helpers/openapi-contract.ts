// The contract between the daemon and its API description: every answer a test receives through
// bootDaemon's request() is checked against the OpenAPI document (the status is one the operation
// lists, the media type is one it lists for that status, and a JSON body matches the schema),
// with ajv's JSON Schema 2020-12 validator. A mismatch throws, which fails the test that made the
// request. Requests no operation matches (unknown routes, the dashboard) are not checked here.
import { appendFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv2020/dist/2020.js';
import { buildOpenApiDocument } from '../../src/http/openapi/document.js';

type Json = Record<string, any>;

interface Route {
  method: string;
  path: string;
  pattern: RegExp;
  literal: boolean;
  responses: Json;
}

export interface Contract {
  document: Json;
  /** Throws when the answer does not match the document; returns the operation's path, or null when none matched. */
  check(answer: { method: string; url: string; status: number; contentType: string | null; body: unknown; text: string }): string | null;
}

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** A contract for a document (by default the daemon's own). */
export function createContract(document: Json = buildOpenApiDocument({ version: 'test' })): Contract {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, validateFormats: false });
  ajv.addSchema(document, 'openapi.json');
  const routes: Route[] = [];
  for (const [path, item] of Object.entries(document.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json)) {
      const pattern = new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
      routes.push({ method: method.toUpperCase(), path, pattern, literal: !path.includes('{'), responses: (op as Json).responses });
    }
  }
  // A literal path wins over a templated one that also matches.
  routes.sort((a, b) => Number(b.literal) - Number(a.literal));
  const validators = new Map<string, ValidateFunction>();
  const validator = (pointer: string) => {
    let v = validators.get(pointer);
    if (!v) validators.set(pointer, (v = ajv.compile({ $ref: `openapi.json#${pointer}` })));
    return v;
  };

  return {
    document,
    check({ method, url, status, contentType, body, text }) {
      const pathname = new URL(url, 'http://x').pathname;
      const route = routes.find((r) => r.method === method.toUpperCase() && r.pattern.test(pathname));
      if (!route) return null;
      const where = `${method} ${pathname} → ${status}`;
      const response = route.responses[String(status)];
      if (!response) {
        throw new Error(
          `contract: ${where} is not documented (${route.method} ${route.path} lists ${Object.keys(route.responses).join(', ')}): ${text.slice(0, 300)}`,
        );
      }
      const media = (contentType ?? '').split(';')[0].trim();
      const content = response.content as Json;
      // An exact media type, or `*/*` for a download whose type is the file's own.
      const key = media in content ? media : '*/*' in content ? '*/*' : undefined;
      if (!key)
        throw new Error(`contract: ${where} answered ${media || 'no content type'}; the document lists ${Object.keys(content).join(', ')}`);
      if (key === 'application/json') {
        const pointer = `/paths/${escapePointer(route.path)}/${route.method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
        const v = validator(pointer);
        if (!v(body)) {
          throw new Error(
            `contract: ${where} body does not match the document: ${ajv.errorsText(v.errors, { separator: '; ' })}\n${text.slice(0, 500)}`,
          );
        }
      }
      if (key === 'text/event-stream' && text) {
        if (!/^(:[^\n]*\n\n|event: message\nid: [^\n]+\ndata: [^\n]+\n\n)*$/.test(text))
          throw new Error(`contract: ${where} is not the documented event-stream framing: ${text.slice(0, 300)}`);
        const pointer = `/paths/${escapePointer(route.path)}/${route.method.toLowerCase()}/responses/${status}/content/text~1event-stream/x-postern-event-data`;
        const v = validator(pointer);
        for (const [, data] of text.matchAll(/^data: (.*)$/gm))
          if (!v(JSON.parse(data)))
            throw new Error(`contract: ${where} event data does not match the document: ${ajv.errorsText(v.errors)}`);
      }
      // POSTERN_CONTRACT_SEEN names a file that collects which operation and status each answer was (coverage).
      if (process.env.POSTERN_CONTRACT_SEEN) appendFileSync(process.env.POSTERN_CONTRACT_SEEN, `${route.method} ${route.path} ${status}\n`);
      return route.path;
    },
  };
}

let shared: Contract | null = null;

/** The daemon's contract, built once per test process. */
export function daemonContract(): Contract {
  shared ??= createContract();
  return shared;
}
