// What SMTP submission refuses, as a closed vocabulary of its own: the submission modules throw
// SubmissionRefused with one of these, and the SMTP adapter turns each into its reply in one place
// (smtp/replies.ts). Refusals of the accept path itself (invalid content, quota, plan limits) stay
// the AppErrors accept throws; the same table maps them.
export type Refusal =
  /** AUTH did not check out: the text says why (never which part of a secret was wrong). */
  | { reason: 'auth-failed'; detail: string }
  /** Too many failed AUTH for this user name or client address: come back in `seconds`. */
  | { reason: 'auth-throttled'; seconds: number }
  /** The envelope sender or the From header is not on a domain the workspace may send from. */
  | { reason: 'sender-not-allowed'; address: string; detail: string }
  /** A recipient that is not an address Postern can send to. */
  | { reason: 'recipient-invalid'; address: string }
  /** A recipient on the workspace's suppression list. */
  | { reason: 'recipient-suppressed'; address: string; why: string }
  /** The key's send budget (rateLimit.send, shared with the API) is spent for now. */
  | { reason: 'rate-limited'; seconds: number }
  /** The message cannot become a send: the text lists what is wrong. */
  | { reason: 'message-invalid'; detail: string };

export class SubmissionRefused extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.reason);
    this.name = 'SubmissionRefused';
  }
}

export const refused = (r: Refusal) => new SubmissionRefused(r);
