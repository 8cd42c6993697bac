// The body of POST /v1/send/batch: `messages`, each a /v1/send body with an optional
// `idempotencyKey` of its own, and `mode`. The envelope is checked here (a refusal of the whole
// request); each message is checked by accept as a single send's body would be, so an item's
// issues are the ones /v1/send would list, under `messages.{i}`.
import { invalidBody, type Issue } from '../lib/errors.js';
import { MAX_BATCH, type BatchMode } from '../contract/sending-schemas.js';

export interface BatchItem {
  body: unknown;
  raw: false;
  idempotencyKey: string | null;
}

/** The envelope of a batch: its mode and its items; throws invalid_body when the envelope is wrong. */
export function readBatchBody(raw: unknown): { mode: BatchMode; items: BatchItem[] } {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    throw invalidBody([{ path: '', message: 'the request body must be a JSON object' }]);
  const input = raw as Record<string, unknown>;
  const issues: Issue[] = [];
  for (const k of Object.keys(input)) if (k !== 'mode' && k !== 'messages') issues.push({ path: k, message: 'unknown field' });
  const mode = input.mode ?? 'atomic';
  if (mode !== 'atomic' && mode !== 'partial') issues.push({ path: 'mode', message: 'must be atomic or partial' });
  const messages = input.messages;
  if (!Array.isArray(messages)) issues.push({ path: 'messages', message: 'must be an array of send bodies' });
  else if (messages.length === 0 || messages.length > MAX_BATCH)
    issues.push({ path: 'messages', message: `must hold 1 to ${MAX_BATCH} messages` });
  if (issues.length) throw invalidBody(issues);
  const items = (messages as unknown[]).map((m): BatchItem => {
    if (!m || typeof m !== 'object' || Array.isArray(m) || !('idempotencyKey' in m)) return { body: m, raw: false, idempotencyKey: null };
    const { idempotencyKey, ...body } = m as Record<string, unknown>;
    // A key that is not a string reaches accept as an empty one, which it refuses by name.
    return { body, raw: false, idempotencyKey: typeof idempotencyKey === 'string' ? idempotencyKey : '' };
  });
  return { mode: mode as BatchMode, items };
}
