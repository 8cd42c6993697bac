// The answer of GET and POST /v1/messages/{id}/checks, as the API description states it.
import { z } from 'zod';

const status = z.enum(['pass', 'warn', 'fail', 'skipped']);

export const messageChecksSchema = z.object({
  id: z.string().describe('the message (msg_ public id)'),
  trigger: z.enum(['automatic', 'on_demand']).describe('automatic: a test-key message checked after accept; on_demand: asked for'),
  checkedAt: z.string().describe('when the checks ran (ISO 8601)'),
  status: status.describe('the worst of the four checks'),
  html: z.object({
    status,
    summary: z.string(),
    dataUpdated: z.string().nullable().describe('when the caniemail data set was last updated'),
    findings: z.array(
      z.object({
        feature: z.string().describe('the caniemail feature, e.g. css-display-flex'),
        title: z.string(),
        kind: z.enum(['css', 'html']),
        url: z.string(),
        found: z.array(z.string()).describe('what in the message uses it, at most 5'),
        clients: z.array(z.object({ client: z.string(), support: z.enum(['unsupported', 'partial']), note: z.string().optional() })),
      }),
    ),
  }),
  links: z.object({
    status,
    summary: z.string(),
    links: z.array(
      z.object({
        url: z.string(),
        in: z.array(z.enum(['html', 'text'])),
        verdict: z.enum(['ok', 'broken', 'unresolved', 'refused', 'error', 'excluded', 'skipped']),
        httpStatus: z.number().int().optional(),
        method: z.enum(['HEAD', 'GET']).optional(),
        finalUrl: z.string().optional(),
        detail: z.string().optional(),
      }),
    ),
  }),
  spam: z.object({
    status,
    summary: z.string(),
    score: z.number().optional(),
    requiredScore: z.number().optional(),
    action: z.string().optional(),
    symbols: z.record(z.string(), z.number()).optional(),
  }),
  headers: z.object({
    status,
    summary: z.string(),
    bulk: z.string().nullable().describe('why the message counts as bulk mail (List-Unsubscribe required), or null'),
    items: z.array(
      z.object({
        header: z.enum(['From', 'Date', 'Message-ID', 'DKIM-Signature', 'List-Unsubscribe']),
        status: z.enum(['pass', 'warn', 'fail']),
        detail: z.string(),
      }),
    ),
  }),
});
