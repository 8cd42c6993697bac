// The API description: served without a key, a valid OpenAPI 3.1 document (checked by
// @seriousme/openapi-schema-validator), one operation for every route the app mounts under /v1 and
// no operation without a route, error statuses from the one code → status table, and the
// contract checker (test/helpers/openapi-contract.ts, which holds every answer the daemon-based
// tests receive against the document) refusing answers the document does not describe. /docs is
// checked in a real browser in openapi-docs.browser.test.ts.
import { Validator } from '@seriousme/openapi-schema-validator';
import t from 'tap';
import { STATUS } from '../../src/http/errors.js';
import { buildOpenApiDocument } from '../../src/http/openapi/document.js';
import { OPERATIONS } from '../../src/http/openapi/operations.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { createContract } from '../helpers/openapi-contract.js';

const toOpenApi = (p: string) => p.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

for (const db of testDatabases()) {
  t.test(`GET /v1/openapi.json: no key, a valid OpenAPI 3.1 document of every /v1 route (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const r = await d.request('GET', '/v1/openapi.json');
    t.equal(r.status, 200);
    t.match(r.headers.get('content-type'), /^application\/json/);
    const again = await d.request('GET', '/v1/openapi.json', { headers: { authorization: 'Bearer not-a-key' } });
    t.same(again.body, r.body, 'the same document, whatever the Authorization header');

    const validator = new Validator();
    const result = await validator.validate(r.body);
    t.same(result.errors, undefined, 'no validation errors');
    t.equal(result.valid, true, 'valid');
    t.equal(validator.version, '3.1', 'an OpenAPI 3.1 document');

    const doc = r.body;
    const routes = d.app.routes();
    const served = new Set(routes.map((x) => `${x.method} ${toOpenApi(x.path)}`));
    const documented = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>))
      for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${path}`);
    const v1 = [...served].filter((s) => s.split(' ')[1].startsWith('/v1/'));
    t.ok(v1.length >= 38, `the app serves the API routes (${v1.length})`);
    t.same(
      v1.filter((s) => !documented.has(s)),
      [],
      'every /v1 route has an operation',
    );
    t.same(
      [...documented].filter((s) => !served.has(s)),
      [],
      'every operation is a route the app serves',
    );

    // Every error answer lists codes whose status (http/errors.ts) is that answer's status.
    let errorAnswers = 0;
    const misplaced: string[] = [];
    for (const item of Object.values(doc.paths as Record<string, Record<string, any>>))
      for (const op of Object.values(item))
        for (const [status, res] of Object.entries(op.responses as Record<string, any>)) {
          const codes = res.content?.['application/json']?.schema?.allOf?.[1]?.properties?.error?.properties?.code?.enum;
          if (!codes) continue;
          errorAnswers++;
          for (const code of codes)
            if (STATUS[code as keyof typeof STATUS] !== Number(status)) misplaced.push(`${op.operationId}: ${code} under ${status}`);
        }
    t.ok(errorAnswers > 100, `error answers documented (${errorAnswers})`);
    t.same(misplaced, [], 'every error code is documented under the status http/errors.ts gives it');
    t.same(
      [...doc.components.schemas.Error.properties.error.properties.code.enum].sort(),
      Object.keys(STATUS).sort(),
      'the envelope lists every code',
    );

    // Scopes, the Idempotency-Key header, the event stream and the downloads.
    t.equal(doc.paths['/v1/send'].post['x-postern-scope'], 'send');
    t.equal(doc.paths['/v1/messages/{id}'].delete['x-postern-scope'], 'cancel');
    t.equal(doc.paths['/v1/openapi.json'].get['x-postern-scope'], null);
    t.same(doc.paths['/v1/openapi.json'].get.security, [], 'the description itself needs no key');
    for (const p of ['/v1/send', '/v1/send-raw'])
      t.ok(
        doc.paths[p].post.parameters.some((x: any) => x.in === 'header' && x.name === 'Idempotency-Key'),
        `${p} documents Idempotency-Key`,
      );
    t.match(doc.paths['/v1/messages'].get.responses['200'].content, { 'application/json': {}, 'text/event-stream': {} });
    t.match(doc.paths['/v1/messages'].get.responses['200'].description, /event: message/);
    t.ok(doc.paths['/v1/inbound/messages/{id}/raw'].get.responses['200'].content['message/rfc822'], 'raw source is message/rfc822');
    t.ok(doc.paths['/v1/inbound/messages/{id}/attachments/{index}'].get.responses['200'].content['*/*'], 'attachments are bytes');
    t.match(doc.paths['/v1/messages'].get.parameters, [{ name: 'limit', in: 'query' }]);
    t.ok(
      doc.paths['/v1/messages'].get.parameters.some((x: any) => x.name === 'metadata' && x.style === 'deepObject'),
      'metadata[key]=value',
    );
    t.equal(
      doc.paths['/v1/send'].post.responses['422'].content['application/json'].schema.allOf[1].properties.error.properties.code.enum[0],
      'invalid_body',
    );
  });

  t.test(`the request schemas are the ones the routes validate with (${db})`, async (t) => {
    const doc = buildOpenApiDocument({ version: 't' });
    for (const op of OPERATIONS.filter((o) => o.body)) {
      const documented = (doc.paths as any)[toOpenApi(op.path)][op.method.toLowerCase()].requestBody.content['application/json'].schema;
      t.ok(documented && typeof documented === 'object', `${op.method} ${op.path} has a request body schema`);
    }
    // A field the suppression body refuses is refused by the document too (strict objects both ways).
    const add = (doc.paths as any)['/v1/suppressions'].post.requestBody.content['application/json'].schema;
    t.equal(add.additionalProperties, false);
    t.same(add.required, ['address']);
  });

  t.test(`the contract checker refuses an answer the document does not describe (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const sent = await d.request('POST', '/v1/send-raw', {
      key: ws.test,
      body: { channel: 'email', to: 'bob@example.net', content: { subject: 'Hi', text: 'Hello' } },
    });
    t.equal(sent.status, 202);
    const got = await d.request('GET', `/v1/messages/${sent.body.id}`, { key: ws.test });
    t.equal(got.status, 200);
    const answer = {
      method: 'GET',
      url: `/v1/messages/${sent.body.id}`,
      status: 200,
      contentType: 'application/json',
      body: got.body,
      text: JSON.stringify(got.body),
    };
    t.equal(createContract().check(answer), '/v1/messages/{id}', 'the real answer matches');

    // The same answer against a document whose Message requires one more field.
    const wrong = buildOpenApiDocument({ version: 't' }) as any;
    wrong.components.schemas.Message.required.push('nope');
    wrong.components.schemas.Message.properties.nope = { type: 'string' };
    t.throws(() => createContract(wrong).check(answer), /body does not match the document/);
    // A status the operation does not list.
    t.throws(() => createContract().check({ ...answer, status: 201 }), /is not documented/);
    // A media type it does not list.
    t.throws(() => createContract().check({ ...answer, contentType: 'text/html' }), /answered text\/html/);
    // An error code another status carries.
    t.throws(
      () =>
        createContract().check({
          ...answer,
          status: 404,
          body: { error: { code: 'invalid_body', message: 'x' } },
        }),
      /body does not match/,
    );
  });

  t.test(`the live tail frames Server-Sent Events as the document says (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    await d.request('POST', '/v1/send-raw', {
      key: ws.test,
      body: { channel: 'email', to: 'bob@example.net', content: { subject: 'Hi', text: 'Hello' } },
    });
    const ac = new AbortController();
    const res = await fetch(`${d.url}/v1/messages?tail=1`, { headers: { authorization: `Bearer ${ws.test}` }, signal: ac.signal });
    const reader = res.body!.getReader();
    let text = '';
    // Up to the end of the first whole message event, however the stream's chunks fall.
    const event = /event: message\nid: [^\n]+\ndata: [^\n]+\n\n/;
    for (let i = 0; i < 1000 && !event.test(text); i++) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += new TextDecoder().decode(chunk.value);
    }
    const whole = event.exec(text);
    t.ok(whole, 'a whole message event arrived');
    text = text.slice(0, whole!.index + whole![0].length);
    ac.abort();
    const contract = createContract();
    const answer = {
      method: 'GET',
      url: '/v1/messages?tail=1',
      status: res.status,
      contentType: res.headers.get('content-type'),
      body: text,
      text,
    };
    t.equal(contract.check(answer), '/v1/messages');
    t.throws(() => contract.check({ ...answer, text: text.replace('event: message', 'event: other') }), /event-stream framing/);
    t.throws(() => contract.check({ ...answer, text: text.replace(/"status":"[a-z_]+"/, '"status":"nope"') }), /event data does not match/);
  });
}
