// A logger whose lines a test reads: the daemon's log, or a module's given one by the test.
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/lib/logger.js';

export function logLines(level: string): { lines: string[]; log: Logger } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  return { lines, log: createLogger(level, sink) };
}
