// SMTP submission: credentials, the throttle, and a submitted message turned into sends. This is the
// area's public face: the rest of the daemon imports only what it names (the `areas-through-their-
// face` rule).
export { GENERIC_USER } from './credentials.js';
export { SubmissionRefused } from './refusals.js';
export type { SmtpCredentialStore } from './smtp-credentials.js';
export type { Submission } from './submission.js';
