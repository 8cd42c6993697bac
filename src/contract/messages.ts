// The words of a message's life as the API says them: its statuses and the filters a listing
// takes. Part of the contract (src/contract/): no zod here, so the dashboard imports these values
// without pulling zod into its bundle.

export const MESSAGE_STATUSES = [
  'scheduled',
  'queued',
  'rendered',
  'dispatched',
  'sent',
  'delivered',
  'failed',
  'opted_out',
  'suppressed',
  'blocked',
  'canceled',
] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/**
 * What the list's `status` filter accepts: a stored status, or `deferred`, which is not one. A
 * deferred message is `dispatched` after at least one temporary failure: it waits for its next
 * attempt (or is in it right now), and its `error` holds the failure that deferred it. A first
 * attempt in flight is `dispatched` with no error, so `error` tells the two apart, in SQL and in
 * memory alike (the dashboard shows such a message as deferred by the same rule).
 */
export const STATUS_FILTERS = [...MESSAGE_STATUSES, 'deferred'] as const;
export type StatusFilter = (typeof STATUS_FILTERS)[number];
