// `postern serve`: config → app → listeners, one ready line, and an orderly stop on SIGTERM/SIGINT
// (a second signal exits at once).
import type { App } from './app.js';
import { createApp } from './app.js';
import type { Config } from './config.js';

async function bootstrapDefaultWorkspace(app: App): Promise<void> {
  if ((await app.workspaces.count()) > 0) return;
  const ws = await app.workspaces.create({ slug: 'default', name: 'Default workspace', plan: 'custom' });
  const live = await app.keys.create(ws, { env: 'live', name: 'bootstrap live key' });
  const test = await app.keys.create(ws, { env: 'test', name: 'bootstrap test key' });
  // Printed once, outside the structured log, so the secrets never enter log storage.
  process.stderr.write(
    [
      '',
      'Created workspace "default" with two API keys. They are shown only this once:',
      `  live: ${live.secret}`,
      `  test: ${test.secret}`,
      '',
    ].join('\n') + '\n',
  );
}

export async function serve(config: Config): Promise<number> {
  const app = await createApp({ config });
  await bootstrapDefaultWorkspace(app);
  const ports = await app.start();
  // The ready line is printed whatever the log level: supervisors and tests wait for it.
  process.stdout.write(
    JSON.stringify({
      level: 30,
      time: Date.now(),
      name: 'postern',
      msg: 'ready',
      http: ports.http,
      smtp: ports.smtp,
      publicUrl: app.publicUrl(),
    }) + '\n',
  );

  return new Promise<number>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      signals += 1;
      if (signals > 1) process.exit(130);
      app.log.info({ signal }, 'stopping');
      app.stop().then(
        () => {
          app.log.info('stopped');
          resolve(0);
        },
        (err) => {
          app.log.error({ err }, 'stop failed');
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}
