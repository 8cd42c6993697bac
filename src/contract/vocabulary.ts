// The API's smaller closed lists: plans, template statuses, suppression reasons, key scopes and the
// error codes of the envelope. Part of the contract (src/contract/); no zod, so the dashboard's
// bundle takes these values without it.

export const PLANS = ['free', 'starter', 'pro', 'custom'] as const;
export type Plan = (typeof PLANS)[number];

export type Env = 'live' | 'test';

export const TEMPLATE_STATUSES = ['active', 'archived'] as const;
export type TemplateStatus = (typeof TEMPLATE_STATUSES)[number];

/** The types a template variable may declare. */
export const VARIABLE_TYPES = ['string', 'number', 'boolean', 'object', 'array'] as const;
export type VariableType = (typeof VARIABLE_TYPES)[number];

export const SUPPRESSION_REASONS = ['bounce', 'complaint', 'manual', 'unsubscribe', 'unregistered'] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

export const SCOPES = ['read', 'send', 'cancel', 'inbound', 'webhooks', 'cluster'] as const;
export type Scope = (typeof SCOPES)[number];
/** Scopes about the box rather than a workspace: never implied by an unscoped key; only an owner grants them. */
export const BOX_SCOPES: readonly Scope[] = ['cluster'];

/** The closed catalogue of `error.code` values (lib/errors.ts throws them, http/errors.ts maps them). */
export const ERROR_CODES = [
  'invalid_request',
  'invalid_body',
  'unauthorized',
  'insufficient_scope',
  'forbidden',
  'plan_limit',
  'not_found',
  'conflict',
  'not_cancelable',
  'already_exists',
  'domain_claimed',
  'existing_mx',
  'shared_domain',
  'gone',
  'payload_too_large',
  'unsupported_media_type',
  'invalid_domain',
  'rate_limited',
  'quota_exceeded',
  'managed_disabled',
  'unavailable',
  'internal',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];
