import type { z } from 'zod';
import type { Issue } from '../lib/errors.js';

/** zod issues as `error.issues` entries (path joined with dots). */
export function zodIssuesOf(error: z.ZodError): Issue[] {
  return error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
}
