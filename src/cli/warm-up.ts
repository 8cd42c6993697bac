// `postern warm-up list` and `postern warm-up set`: the warm-up schedules of the source addresses
// (docs/deliverability.md, "Warm-up"), and the operator's override of a pair's place on the ramp.
import type { App } from '../app.js';
import type { Command } from './command.js';
import { CommandFailure, required, UsageError } from './command.js';

function warmUpOf(app: App) {
  if (!app.warmUp) throw new CommandFailure('warm-up is off (delivery.warmUp.enabled)');
  return app.warmUp;
}

export const warmUpCommands: Command[] = [
  {
    name: 'warm-up list',
    usage: '',
    summary: "list the warm-up schedules: each source and sending domain's step, today's allowance and use, the next step, why it paused",
    run: async (app) => warmUpOf(app).list(),
  },
  {
    name: 'warm-up set',
    usage: '--source NAME --domain D (--step N | --warm)',
    summary: 'put a source and sending domain at step N of the curve (1 is the first) or past it (--warm), from today, unpaused',
    options: { source: { type: 'string' }, domain: { type: 'string' }, step: { type: 'string' }, warm: { type: 'boolean' } },
    run: async (app, { values }) => {
      const warmUp = warmUpOf(app);
      const source = required(values, 'source');
      const domain = required(values, 'domain');
      if (!(source in app.config.delivery.sources)) throw new CommandFailure(`no source ${source} in delivery.sources`);
      const steps = app.config.delivery.warmUp.curve.length;
      if (values.warm === true) return warmUp.set(source, domain, steps);
      const step = Number(values.step);
      if (typeof values.step !== 'string' || !Number.isInteger(step) || step < 1 || step > steps)
        throw new UsageError(`--step must be 1 to ${steps} (the curve's steps), or give --warm`);
      return warmUp.set(source, domain, step - 1);
    },
  },
];
