// The shapes a template is made of beside its content (whose schemas are the contract's,
// src/contract/channels.ts), as zod schemas: declared variables, slug rules and the description. Strict objects: an unknown
// field is a typo the caller wants to hear about, not something to store silently.
import { z } from 'zod';
import { VARIABLE_TYPES, type VariableType } from './vocabulary.js';

export const SLUG_PATTERN = /^[a-z0-9_-]{1,64}$/;

/** A slug as a request gives it: lowercased, then 1–64 of a-z, 0-9, `-`, `_`. */
export const slugSchema = z
  .string()
  .transform((s) => s.toLowerCase())
  .pipe(z.string().regex(SLUG_PATTERN, 'slug must be 1-64 characters of a-z, 0-9, - and _'));

export interface Variable {
  name: string;
  type: VariableType;
  description: string;
  required: boolean;
}

const variableSchema = z.strictObject({
  // A Mustache path: names separated by dots.
  name: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$/, 'variable name must be a dotted path of letters, digits, _ and -')
    .max(128),
  type: z.enum(VARIABLE_TYPES, { message: `type must be one of ${VARIABLE_TYPES.join(', ')}` }).default('string'),
  description: z.string().max(500).default(''),
  required: z.boolean().default(false),
});

export const variablesSchema = z
  .array(variableSchema)
  .max(200)
  .default([])
  .superRefine((vars, ctx) => {
    const seen = new Set<string>();
    vars.forEach((v, i) => {
      if (seen.has(v.name)) ctx.addIssue({ code: 'custom', message: `variable ${v.name} is declared twice`, path: [i, 'name'] });
      seen.add(v.name);
    });
  });

export const descriptionSchema = z.string().max(500);
