// Structured JSON logs (pino). Secrets and bodies never reach a log line: request logging records
// method, path and status only, and these paths are redacted should an object carrying them slip in.
import { pino, symbols, type Logger, type DestinationStream } from 'pino';

export type { Logger };

const redact = [
  'secret',
  '*.secret',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'password',
  '*.password',
  'credentials',
  '*.credentials',
  'body',
  '*.body',
  'html',
  '*.html',
  'text',
  '*.text',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, redact: { paths: redact, censor: '[redacted]' }, base: { name: 'postern' } }, destination);
}

/**
 * Writes one line through the logger's own destination whatever its level, after every line logged
 * before it: pino writes asynchronously, so a line written to stdout directly can overtake them.
 */
export function writeLine(log: Logger, line: string): void {
  const stream = (log as unknown as Record<symbol, DestinationStream>)[symbols.streamSym];
  stream.write(line + '\n');
}
