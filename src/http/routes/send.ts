// POST /v1/send, /v1/send-raw and /v1/send/batch (scope send): hand the body to outbound, answer
// 202 once what is accepted is committed. Validation of the bodies lives in outbound/send-input.ts
// and outbound/batch-input.ts.
import { Router } from 'express';
import { type Outbound, readBatchBody } from '../../outbound/index.js';
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
  r.post('/send/batch', requireScope('send'), async (req, res) => {
    const p = principalOf(res);
    const { mode, items } = readBatchBody(req.body);
    const answer = await outbound.acceptBatch({ workspace: p.workspace, livemode: p.livemode }, items, {
      mode,
      key: req.get('idempotency-key') ?? null,
    });
    res.status(202).json(answer);
  });
  return r;
}
