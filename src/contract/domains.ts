// The words of a domain as the API says them: its kind and status, its MTA-STS mode, the states of
// a DKIM rotation and of each key, what to do with a key's record, and a check's verdict. Part of
// the contract (src/contract/); no zod, so the dashboard's bundle takes these lists without it.

export const DOMAIN_KINDS = ['shared', 'custom'] as const;
export type DomainKind = (typeof DOMAIN_KINDS)[number];

export const DOMAIN_STATUSES = ['pending', 'verified', 'failed'] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];

/** What a custom domain's MTA-STS policy asks of senders (RFC 8461 §5); `none` withdraws it. */
export const MTA_STS_MODES = ['testing', 'enforce', 'none'] as const;
export type MtaStsMode = (typeof MTA_STS_MODES)[number];

/** Where a domain's DKIM rotation stands: `idle` when no key waits to be published, verified or retired. */
export const DKIM_ROTATION_STATES = ['idle', 'pending', 'verified', 'retiring'] as const;
export type DkimRotationState = (typeof DKIM_ROTATION_STATES)[number];

/** A DKIM key's life: published and checked (pending → verified), signing (active), then retired. */
export const DKIM_KEY_STATES = ['pending', 'verified', 'active', 'retiring', 'retired'] as const;
export type DkimKeyState = (typeof DKIM_KEY_STATES)[number];

/** What the operator does with a key's DNS record now. */
export const DKIM_KEY_ACTIONS = ['publish', 'keep', 'remove'] as const;

/** A doctor's check verdict. */
export const CHECK_STATUSES = ['pass', 'warn', 'fail'] as const;
