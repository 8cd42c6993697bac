// SMTP credentials as the API shows them (never the secret but in the create answer), and the
// body that creates one, as zod schemas.
// Part of the contract (src/contract/): it imports zod and other contract files only, so the
// daemon, the dashboard (types) and the SDK generator read the same shapes.
import { z } from 'zod';

export const DESCRIPTION_MAX = 200;

/** POST /v1/smtp-credentials (the environment is the key's). */
export const createSmtpCredentialBody = z.strictObject({
  description: z.string().max(DESCRIPTION_MAX).optional().describe('what the credential is for (an application, a host)'),
});

export const smtpCredentialSchema = z
  .object({
    id: z.string(),
    username: z.string(),
    env: z.enum(['live', 'test']),
    livemode: z.boolean(),
    description: z.string(),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
  })
  .meta({ id: 'SmtpCredential' });

/** A credential with its secret: only the create answer carries it. */
export const smtpCredentialWithSecretSchema = smtpCredentialSchema.extend({ secret: z.string() });
