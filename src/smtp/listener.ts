// The SMTP listener. Until the inbound capability lands it serves no domain, so every recipient
// is refused with 550 5.7.1: Postern is never an open relay, not even before it receives mail.
import { SMTPServer } from 'smtp-server';
import type { Config } from '../config.js';
import type { Logger } from '../lib/logger.js';

export interface SmtpListener {
  listen(): Promise<number>;
  close(): Promise<void>;
}

export function createSmtpListener({ config, log }: { config: Config; log: Logger }): SmtpListener {
  const server = new SMTPServer({
    name: config.hostname,
    banner: 'Postern ESMTP',
    disabledCommands: ['AUTH'],
    logger: false,
    onRcptTo(address, _session, callback) {
      const err = Object.assign(new Error(`5.7.1 <${address.address}>: relay access denied`), { responseCode: 550 });
      callback(err);
    },
  });
  server.on('error', (err) => log.warn({ err }, 'smtp error'));
  return {
    listen: () =>
      new Promise((resolve, reject) => {
        server.server.once('error', reject);
        server.listen(config.smtp.port, config.smtp.host, () => {
          server.server.off('error', reject);
          resolve((server.server.address() as { port: number }).port);
        });
      }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
