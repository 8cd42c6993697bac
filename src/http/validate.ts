// zod at the edge: parse a request part or throw invalid_body listing every issue at once.
import type { z } from 'zod';
import { invalidBody, type Issue } from '../lib/errors.js';

export function zodIssues(error: z.ZodError): Issue[] {
  return error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
}

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body ?? {});
  if (!result.success) throw invalidBody(zodIssues(result.error));
  return result.data;
}
