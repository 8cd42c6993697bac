// /v1/suppressions: the suppression list of the key's workspace and environment (a test key's list
// holds only test sends, a live key's only live ones). GET (scope read) lists entries newest first
// (`limit` 1–200, default 50; `cursor` the `nextCursor` of the previous page; `before` an ISO
// timestamp, the older way to page, which skips entries sharing the boundary millisecond; `reason`
// filter; `q` a part of the address);
// POST (scope send) adds `{address, reason?: manual}`; DELETE /v1/suppressions/{address} (scope send)
// removes one, after which sends to the address go out again. POST /v1/suppressions/import (scope
// send) reads a CSV, NDJSON or JSON body as a stream (mounted before /v1's JSON parser), GET
// /v1/suppressions/export (scope read) writes the list as CSV or NDJSON (suppressions/transfer.ts).
import { pipeline } from 'node:stream/promises';
import { Readable, type Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { Router, type Response } from 'express';
import { AppError, notFound } from '../../lib/errors.js';
import { parseBody, zodIssues } from '../../lib/validation.js';
import { addSuppressionBody, listSuppressionsQuery } from '../../contract/suppression-schemas.js';
import {
  decodePosition,
  encodePosition,
  exportSuppressions,
  ImportRefused,
  importSuppressions,
  type ListScope,
  positionOf,
  type SuppressionStore,
  type TransferFormat,
} from '../../suppressions/index.js';
import type { Deps } from '../../deps.js';
import { principalOf, requireScope } from '../auth.js';
import { SUPPRESSION_REASONS, type SuppressionReason } from '../../contract/vocabulary.js';

const scopeOf = (res: Response): ListScope => {
  const p = principalOf(res);
  return { workspaceId: p.workspace.id, livemode: p.livemode };
};

export function suppressionRoutes(store: SuppressionStore, now: () => Date): Router {
  const r = Router();
  r.get('/suppressions', requireScope('read'), async (req, res) => {
    const q = listSuppressionsQuery.safeParse(req.query);
    if (!q.success)
      throw new AppError(
        'invalid_request',
        zodIssues(q.error)
          .map((i) => `${i.path}: ${i.message}`)
          .join('; '),
      );
    const after = q.data.cursor === undefined ? null : decodePosition(q.data.cursor);
    if (q.data.cursor !== undefined && !after) throw new AppError('invalid_request', 'cursor: not a cursor this list gave out');
    const data = await store.list(scopeOf(res), { ...q.data, after, search: q.data.q });
    const more = data.length === q.data.limit;
    res.json({
      data,
      nextCursor: more ? encodePosition(positionOf(data[data.length - 1])) : null,
      nextBefore: more ? data[data.length - 1].createdAt : null,
    });
  });
  r.get('/suppressions/export', requireScope('read'), async (req, res) => {
    const format = req.query.format ?? 'csv';
    if (format !== 'csv' && format !== 'ndjson') throw new AppError('invalid_request', 'format must be csv or ndjson');
    res.setHeader('Content-Type', format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson');
    res.setHeader('Content-Disposition', `attachment; filename="suppressions.${format}"`);
    await pipeline(Readable.from(exportSuppressions(store, scopeOf(res), format)), res);
  });
  r.post('/suppressions', requireScope('send'), async (req, res) => {
    const body = parseBody(addSuppressionBody, req.body);
    if (body.expiresAt !== undefined && Date.parse(body.expiresAt) <= now().getTime())
      throw new AppError('invalid_body', 'expiresAt must be in the future', {
        issues: [{ path: 'expiresAt', message: 'must be in the future' }],
      });
    const entry = await store.add(scopeOf(res), body);
    res.status(201).json(entry);
  });
  r.delete('/suppressions/:address', requireScope('send'), async (req, res) => {
    const address = String(req.params.address);
    if (!(await store.remove(scopeOf(res), address))) throw notFound(`suppression ${address}`);
    res.json({ address: address.toLowerCase(), deleted: true });
  });
  return r;
}

const FORMATS: Record<string, TransferFormat> = {
  'text/csv': 'csv',
  'application/x-ndjson': 'ndjson',
  'application/jsonl': 'ndjson',
  'application/json': 'json',
};

const DECODERS: Record<string, (() => Transform) | null> = {
  identity: null,
  gzip: () => createGunzip(),
  deflate: () => createInflate(),
  br: () => createBrotliDecompress(),
};

const bytesOf = (limit: string) => {
  const [, n, unit] = /^(\d+)(b|kb|mb)$/.exec(limit)!;
  return Number(n) * { b: 1, kb: 1024, mb: 1024 * 1024 }[unit as 'b' | 'kb' | 'mb'];
};

/** POST /v1/suppressions/import: mounted before /v1's JSON parser, so the body arrives as a stream. */
export function suppressionImportRoutes(deps: Pick<Deps, 'db' | 'clock' | 'ids' | 'config'>): Router {
  const r = Router();
  r.post('/suppressions/import', requireScope('send'), async (req, res) => {
    const [type, ...params] = (req.headers['content-type'] ?? '').split(';').map((p) => p.trim().toLowerCase());
    const format = FORMATS[type];
    if (!format)
      throw new AppError(
        'unsupported_media_type',
        `send text/csv, application/x-ndjson or application/json (not ${type || 'no Content-Type'})`,
      );
    const charset = params
      .find((p) => p.startsWith('charset='))
      ?.slice('charset='.length)
      .replace(/"/g, '');
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')
      throw new AppError('invalid_request', 'unsupported request body encoding: send UTF-8');
    const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
    const decode = DECODERS[encoding];
    if (decode === undefined) throw new AppError('invalid_request', 'unsupported request body encoding');
    const body = decode ? req.pipe(decode()) : req;
    // A decoder's error ends its stream: read it as the body's, so the import refuses it.
    let undecodable = false;
    if (body !== req) {
      req.on('error', (err) => body.destroy(err));
      body.on('error', () => (undecodable = true));
    }
    const reason = req.query.reason ?? 'manual';
    if (typeof reason !== 'string' || !SUPPRESSION_REASONS.includes(reason as SuppressionReason))
      throw new AppError('invalid_request', `reason must be one of ${SUPPRESSION_REASONS.join(', ')}`);
    try {
      const result = await importSuppressions(deps, scopeOf(res), body, {
        format,
        reason: reason as SuppressionReason,
        bodyLimit: bytesOf(deps.config.http.bodyLimit),
      });
      res.json(result);
    } catch (err) {
      // Whatever of the body was not read is drained, so the answer reaches the client.
      req.resume();
      if (undecodable) throw new AppError('invalid_request', `request body could not be decompressed (Content-Encoding: ${encoding})`);
      if (err instanceof ImportRefused) throw new AppError('invalid_request', err.message);
      // csv-parse's own errors (an unclosed quote): the body, not the server.
      if ((err as { code?: string }).code?.startsWith('CSV_')) throw new AppError('invalid_request', `CSV: ${(err as Error).message}`);
      throw err;
    }
  });
  return r;
}
