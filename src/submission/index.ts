// The public face of submission/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export { GENERIC_USER } from './credentials.js';
export { SubmissionRefused } from './refusals.js';
export type { SmtpCredentialStore } from './smtp-credentials.js';
export type { Submission } from './submission.js';
