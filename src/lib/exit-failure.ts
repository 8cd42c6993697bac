// A failure the process ends on, said in one line on stderr (`postern: …`), with its exit code: 2
// for something the operator must fix first (a setting, a missing database), 1 for a failure worth
// retrying. The commands and the daemon's start throw their own kinds of it; the entry prints them.

/** A problem said in one line, with the exit code the process ends with. */
export class ExitFailure extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 2,
  ) {
    super(message);
    this.name = new.target.name;
  }
}
