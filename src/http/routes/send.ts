// POST /v1/send and /v1/send-raw (scope send): hand the body to outbound.accept, answer 202 once
// the message is committed. Validation of the body lives in outbound/send-input.ts.
import { Router } from 'express';
import type { Outbound } from '../../outbound/outbound.js';
import { principalOf, requireScope } from '../auth.js';

export function sendRoutes(outbound: Outbound): Router {
  const r = Router();
  for (const [path, raw] of [
    ['/send', false],
    ['/send-raw', true],
  ] as const) {
    r.post(path, requireScope('send'), async (req, res) => {
      const p = principalOf(res);
      const key = req.get('idempotency-key');
      const accepted = await outbound.accept({ workspace: p.workspace, livemode: p.livemode }, req.body, {
        raw,
        idempotencyKey: key ?? null,
      });
      res.status(202).json(accepted);
    });
  }
  return r;
}
