// The OpenAPI 3.1 document, built from the operation registry (operations.ts) and the same zod
// schemas the routes validate with, through zod 4's own JSON Schema output (draft 2020-12, which
// is OpenAPI 3.1's dialect): request bodies and query strings as the schema reads them (io
// `input`), answers as the code writes them (io `output`). Error statuses come from the one
// code → status table in http/errors.ts. Schemas with a `.meta({ id })` become named components.
import { z } from 'zod';
import { STATUS } from '../errors.js';
import { COMMON_ERRORS, OPERATIONS, type Operation } from './operations.js';
import type { ErrorCode } from '../../contract/vocabulary.js';

type Json = Record<string, unknown>;

const SCOPE_DOC: Record<string, string> = {
  read: 'read messages, templates (and render them), suppressions, connections',
  send: 'send, retry, manage templates, suppressions and SMTP credentials',
  cancel: 'cancel messages',
  inbound: 'domains, addresses and received mail',
  webhooks: 'webhook endpoints and their deliveries',
};

/** `/v1/messages/:id` → `/v1/messages/{id}`. */
const openApiPath = (expressPath: string) => expressPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

class Components {
  readonly schemas: Record<string, Json> = {};

  /** The JSON Schema of a zod schema; named parts are moved to components and referenced. */
  convert(schema: z.ZodType, io: 'input' | 'output'): Json {
    const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
    delete out.$schema;
    const defs = (out.$defs ?? {}) as Record<string, Json>;
    delete out.$defs;
    const names: Record<string, string> = {};
    for (const [name, def] of Object.entries(defs)) {
      // A named schema read as input can differ from its output form (defaults make fields optional).
      const key = io === 'input' ? `${name}Input` : name;
      const text = JSON.stringify(def);
      if (this.schemas[key] && JSON.stringify(this.schemas[key]) !== text) throw new Error(`two different schemas named ${key}`);
      this.schemas[key] = def;
      names[name] = key;
    }
    const rewritten = JSON.parse(
      JSON.stringify(out).replace(/"#\/\$defs\/([^"]+)"/g, (_m, n: string) => `"#/components/schemas/${names[n] ?? n}"`),
    ) as Json;
    for (const key of Object.values(names)) {
      this.schemas[key] = JSON.parse(
        JSON.stringify(this.schemas[key]).replace(/"#\/\$defs\/([^"]+)"/g, (_m, n: string) => `"#/components/schemas/${names[n] ?? n}"`),
      ) as Json;
    }
    return rewritten;
  }
}

/** Every error code an operation can answer with, grouped by status. */
function errorsByStatus(op: Operation): Map<number, ErrorCode[]> {
  const codes = new Set<ErrorCode>([...(op.scope === null ? [] : COMMON_ERRORS), ...op.errors]);
  if (op.scope) codes.add('insufficient_scope');
  const by = new Map<number, ErrorCode[]>();
  for (const code of codes) by.set(STATUS[code], [...(by.get(STATUS[code]) ?? []), code]);
  return by;
}

function parameters(op: Operation, c: Components): Json[] {
  const out: Json[] = [];
  for (const name of [...op.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1])) {
    out.push({ name, in: 'path', required: true, description: op.params?.[name], schema: { type: 'string' } });
  }
  if (op.query) {
    const schema = c.convert(op.query, 'input');
    const props = (schema.properties ?? {}) as Record<string, Json>;
    const required = new Set((schema.required ?? []) as string[]);
    for (const [name, s] of Object.entries(props)) {
      const { description, ...rest } = s;
      const p: Json = { name, in: 'query', required: required.has(name), schema: rest };
      if (description) p.description = description;
      if (rest.type === 'object') Object.assign(p, { style: 'deepObject', explode: true });
      out.push(p);
    }
  }
  if (op.idempotencyKey) {
    out.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'A key of your choosing, scoped to the workspace and environment: a repeat within 24 hours answers the original 202 body again (same id), whatever the new body says, and sends nothing.',
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    });
  }
  return out;
}

function operation(op: Operation, c: Components): Json {
  const responses: Json = {};
  for (const s of op.success) {
    const content: Json = {};
    if ('json' in s && s.json) content['application/json'] = { schema: c.convert(s.json, 'output') };
    // OpenAPI 3.1 has no schema for one event; x-postern-event-data gives the `data:` of each.
    if ('stream' in s)
      content[s.stream] = {
        schema: { type: 'string', description: 'Server-Sent Events (see the description)' },
        'x-postern-event-data': c.convert(s.event, 'output'),
      };
    // Bytes: OpenAPI 3.1 describes a binary body by its media type alone (no string schema).
    if ('bytes' in s) content[s.bytes] = {};
    // Several successes of one status are one response with a media type each (CSV or NDJSON).
    const earlier = responses[String(s.status)] as { description: string; content: Json } | undefined;
    responses[String(s.status)] = earlier
      ? { description: `${earlier.description}; or ${s.description}`, content: { ...earlier.content, ...content } }
      : { description: s.description, content };
  }
  for (const [status, codes] of [...errorsByStatus(op)].sort((a, b) => a[0] - b[0])) {
    responses[String(status)] = {
      description: codes.join(', '),
      ...(status === 429 || codes.includes('unavailable')
        ? { headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'seconds to wait' } } }
        : {}),
      content: {
        'application/json': {
          schema: {
            allOf: [
              { $ref: '#/components/schemas/Error' },
              { type: 'object', properties: { error: { type: 'object', properties: { code: { enum: codes } } } } },
            ],
          },
        },
      },
    };
  }
  const doc: Json = {
    operationId: op.id,
    tags: [op.tag],
    summary: op.summary,
    description: op.scope ? `Scope: \`${op.scope}\` (${SCOPE_DOC[op.scope]}).` : 'No API key.',
    security: op.scope ? [{ apiKey: [op.scope] }] : [],
    'x-postern-scope': op.scope,
    responses,
  };
  const params = parameters(op, c);
  if (params.length) doc.parameters = params;
  if (op.body) doc.requestBody = { required: true, content: { 'application/json': { schema: c.convert(op.body, 'input') } } };
  if (op.bodyMedia) doc.requestBody = { required: true, content: Object.fromEntries(op.bodyMedia.map((m) => [m, {}])) };
  return doc;
}

const errorSchema = {
  type: 'object',
  description:
    'The error envelope of every failed request: a code from a closed list, a message for people, and extra fields some codes add.',
  properties: {
    error: {
      type: 'object',
      properties: {
        code: { type: 'string', enum: Object.keys(STATUS) },
        message: { type: 'string' },
        issues: {
          type: 'array',
          description: 'invalid_body: every validation problem at once',
          items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } }, required: ['path', 'message'] },
        },
        scope: { type: 'string', description: 'insufficient_scope: the scope needed' },
        limit: { description: 'plan_limit, rate_limited, quota_exceeded: the limit reached' },
        status: { type: 'string', description: 'not_cancelable, conflict: the status observed' },
        hosts: { type: 'array', items: { type: 'string' }, description: 'existing_mx: the MX hosts found' },
      },
      required: ['code', 'message'],
    },
  },
  required: ['error'],
  additionalProperties: false,
};

/** The OpenAPI 3.1 document of the daemon's HTTP API. */
export function buildOpenApiDocument(opts: { version: string }): Json {
  const c = new Components();
  const paths: Record<string, Json> = {};
  for (const op of OPERATIONS) {
    const p = openApiPath(op.path);
    paths[p] = { ...paths[p], [op.method.toLowerCase()]: operation(op, c) };
  }
  return {
    openapi: '3.1.1',
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    info: {
      title: 'Postern HTTP API',
      version: opts.version,
      description: [
        'Every /v1 operation takes an API key as `Authorization: Bearer <key>` (the dashboard uses its session cookie instead);',
        'each names the scope it needs (`x-postern-scope`), a key without scopes may do everything a workspace may',
        "(not `cluster`, the box's nodes, which a key has only when an owner granted it by name).",
        'Errors share one envelope (`Error`). See docs/api/ and docs/openapi.md.',
      ].join(' '),
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/' }],
    tags: [
      'meta',
      'sending',
      'messages',
      'templates',
      'suppressions',
      'connections',
      'inbound',
      'reports',
      'destinations',
      'webhooks',
      'submission',
      'cluster',
    ].map((name) => ({
      name,
    })),
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'an API key (`sk_live_…` or `sk_test_…`); its environment is the mode' },
      },
      schemas: { Error: errorSchema, ...c.schemas },
    },
  };
}
