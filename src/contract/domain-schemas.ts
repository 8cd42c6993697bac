// A domain as the API shows it (its records, return path, MTA-STS and DKIM keys), the bodies
// that claim one and rotate its keys, and the doctor's checks of it, as zod schemas.
// Part of the contract (src/contract/): it imports zod and other contract files only, so the
// daemon, the dashboard (types) and the SDK generator read the same shapes.
import { z } from 'zod';
import {
  CHECK_STATUSES,
  DKIM_KEY_ACTIONS,
  DKIM_KEY_STATES,
  DKIM_ROTATION_STATES,
  DOMAIN_KINDS,
  DOMAIN_STATUSES,
  MTA_STS_MODES,
} from './domains.js';

/** A DNS record to publish. */
const dnsRecord = z.object({
  type: z.enum(['MX', 'TXT']),
  name: z.string(),
  value: z.string(),
  priority: z.number().int().optional(),
  purpose: z.string(),
});

/** The InboundDomain JSON as a zod schema, for the API description. */
export const inboundDomainSchema = z
  .object({
    id: z.string(),
    domain: z.string(),
    kind: z.enum(DOMAIN_KINDS),
    status: z.enum(DOMAIN_STATUSES),
    records: z.array(
      dnsRecord.extend({ check: z.enum(['inboundMx', 'dkim']), verified: z.boolean(), stillPublished: z.boolean().nullable() }),
    ),
    returnPath: z
      .object({
        host: z.string(),
        verified: z.boolean(),
        verifiedAt: z.string().nullable(),
        stillPublished: z.boolean().nullable(),
        records: z.array(dnsRecord),
      })
      .nullable(),
    mtaSts: z
      .object({
        mode: z.enum(MTA_STS_MODES),
        maxAge: z.number().int(),
        policyId: z.string(),
        url: z.string(),
        served: z.boolean(),
        records: z.array(z.object({ type: z.enum(['TXT']), name: z.string(), value: z.string(), purpose: z.string() })),
      })
      .nullable(),
    dkim: z
      .object({
        rotation: z.enum(DKIM_ROTATION_STATES),
        nextRotationAt: z.string().nullable(),
        lastRotatedAt: z.string().nullable(),
        keys: z.array(
          z.object({
            selector: z.string(),
            algorithm: z.enum(['rsa', 'ed25519']),
            state: z.enum(DKIM_KEY_STATES),
            action: z.enum(DKIM_KEY_ACTIONS),
            type: z.enum(['TXT']),
            name: z.string(),
            value: z.string(),
            purpose: z.string(),
            createdAt: z.string().nullable(),
            verifiedAt: z.string().nullable(),
            activatedAt: z.string().nullable(),
            retireAt: z.string().nullable(),
            retiredAt: z.string().nullable(),
          }),
        ),
      })
      .nullable(),
    sending: z.object({ verified: z.boolean(), verifiedAt: z.string().nullable() }),
    receiving: z.object({ verified: z.boolean(), verifiedAt: z.string().nullable() }),
    verifiedAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'InboundDomain' });

/** The body of POST /v1/inbound/domains/{id}/dkim/rotate (optional). */
export const rotateDkimBody = z.strictObject({
  ed25519: z.boolean().optional(),
});

/** The body of POST /v1/inbound/domains. */
export const claimDomainBody = z.strictObject({
  domain: z.string(),
  acknowledgeExistingMx: z.boolean().optional(),
});

/** The JSON of one domain's checks (GET /v1/inbound/domains/{id}/checks), for the API description. */
const checkSchema = z.object({
  name: z.string(),
  status: z.enum(CHECK_STATUSES),
  detail: z.string(),
  fix: z.object({ type: z.string(), name: z.string(), value: z.string() }).optional(),
});

export const domainChecksSchema = z
  .object({
    id: z.string(),
    domain: z.string(),
    workspace: z.string(),
    status: z.enum(CHECK_STATUSES),
    checks: z.array(checkSchema),
    host: z.array(checkSchema),
  })
  .meta({ id: 'DomainChecks' });
