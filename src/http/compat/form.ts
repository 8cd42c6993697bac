// Form bodies for the vendor APIs that take them (Mailgun's): multipart/form-data, read with
// busboy, or application/x-www-form-urlencoded. Each field keeps every value it was given (a form
// repeats `to` and `attachment`); files are read whole, the body bounded by `http.bodyLimit`.
import type Busboy from 'busboy';
import type MimeTypes from 'mime-types';
import type { Request, RequestHandler } from 'express';
import { AppError } from '../../lib/errors.js';
import { lazyRequire } from '../../lib/lazy.js';

// Loaded at the first form: an idle daemon does not load it (test/idle-memory.test.ts).
const busboy = lazyRequire<typeof Busboy>('busboy');
const mimeTypes = lazyRequire<typeof MimeTypes>('mime-types');

// A file part without a type of its own (the platform FormData sends a Buffer so) is typed by its
// name's extension, as Mailgun does; what the name does not tell stays application/octet-stream.
const OCTETS = 'application/octet-stream';
const typeOf = (mimeType: string | undefined, filename: string) =>
  mimeType && mimeType !== OCTETS ? mimeType : mimeTypes().lookup(filename) || OCTETS;

export interface FormFile {
  field: string;
  filename: string;
  contentType: string;
  content: Buffer;
}

export interface Form {
  fields: Map<string, string[]>;
  files: FormFile[];
}

/** `40mb` (the http.bodyLimit form) in bytes. */
function byteLimit(limit: string): number {
  const m = /^(\d+)(b|kb|mb)$/.exec(limit);
  if (!m) throw new Error(`not a size: ${limit}`);
  return Number(m[1]) * { b: 1, kb: 1024, mb: 1024 * 1024 }[m[2] as 'b' | 'kb' | 'mb'];
}

const tooLarge = (limit: number) => new AppError('payload_too_large', `the request body is larger than ${limit} bytes (http.bodyLimit)`);

function readForm(req: Request, limit: number): Promise<Form> {
  const form: Form = { fields: new Map(), files: [] };
  const add = (name: string, value: string) => form.fields.set(name, [...(form.fields.get(name) ?? []), value]);
  return new Promise((resolve, reject) => {
    let size = 0;
    let failed = false;
    const fail = (err: AppError) => {
      if (failed) return;
      failed = true;
      req.unpipe();
      req.resume();
      reject(err);
    };
    let parser: Busboy.Busboy;
    try {
      parser = busboy()({ headers: req.headers, limits: { fieldSize: limit, fileSize: limit, fields: 10_000, files: 100 } });
    } catch (err) {
      return reject(new AppError('invalid_request', `the form cannot be read: ${(err as Error).message}`));
    }
    parser.on('field', (name, value, info) => {
      size += value.length;
      if (info.valueTruncated || size > limit) return fail(tooLarge(limit));
      add(name, value);
    });
    parser.on('file', (field, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => {
        size += c.length;
        if (size > limit) return fail(tooLarge(limit));
        chunks.push(c);
      });
      stream.on('limit', () => fail(tooLarge(limit)));
      stream.on('end', () =>
        form.files.push({
          field,
          filename: info.filename ?? field,
          contentType: typeOf(info.mimeType, info.filename ?? field),
          content: Buffer.concat(chunks),
        }),
      );
    });
    parser.on('filesLimit', () => fail(new AppError('invalid_request', 'at most 100 files in a form')));
    parser.on('fieldsLimit', () => fail(new AppError('invalid_request', 'at most 10000 fields in a form')));
    parser.on('error', (err: Error) => fail(new AppError('invalid_request', `the form cannot be read: ${err.message}`)));
    parser.on('close', () => {
      if (!failed) resolve(form);
    });
    req.pipe(parser);
  });
}

/** Reads a form body into `req.body` (a Form); any other content type is refused (415). */
export function formBody(limit: string): RequestHandler {
  const bytes = byteLimit(limit);
  return (req, _res, next) => {
    const length = Number(req.headers['content-length'] ?? 0);
    if (req.headers['transfer-encoding'] === undefined && length === 0) {
      req.body = { fields: new Map(), files: [] } satisfies Form;
      return next();
    }
    if (!req.is('multipart/form-data') && !req.is('application/x-www-form-urlencoded'))
      throw new AppError(
        'unsupported_media_type',
        'send a form: the request body must be multipart/form-data or application/x-www-form-urlencoded',
      );
    readForm(req, bytes).then(
      (form) => {
        req.body = form;
        next();
      },
      (err: unknown) => next(err),
    );
  };
}
