// What a bare email address looks like where Postern takes one (a send's `to`, `from`, `cc`, …; a
// submitted recipient; an imported suppression): a local part without spaces or specials, and a
// host name of letters, digits and hyphens. Deliberately simpler than RFC 5322.
// Part of the contract: the send schemas take it, and so may the dashboard.
const EMAIL = /^[^\s@<>()[\],;:"\\]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

/** Whether `s` is a bare address such as someone@example.com (at most 320 characters). */
export const isEmailAddress = (s: string) => s.length <= 320 && EMAIL.test(s);
