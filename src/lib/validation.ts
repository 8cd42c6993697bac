// zod at the edges (HTTP bodies, CLI arguments, the send input): a failed parse becomes
// invalid_body listing every issue at once, each as { path (dot-joined), message }.
import type { z } from 'zod';
import { invalidBody, type Issue } from './errors.js';

export function zodIssues(error: z.ZodError): Issue[] {
  return error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
}

/** The parsed value, or throws invalid_body with every issue. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body ?? {});
  if (!result.success) throw invalidBody(zodIssues(result.error));
  return result.data;
}
