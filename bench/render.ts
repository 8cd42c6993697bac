// Renders per second of an email template with 20 variables: with Mustache's parse cache warm
// (the daemon's steady state) and with the cache cleared before every render (a fresh parse).
import Mustache from 'mustache';
import { renderContent } from '../src/templates/render.js';
import { template20 as content, vars20 as vars } from './template-20.js';

function measure(label: string, fresh: boolean, ms = 1500, maxIterations = 200_000): void {
  for (let i = 0; i < 200; i++) renderContent('email', content, vars); // warm up the JIT
  let n = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(ms) * 1_000_000n;
  while (n < maxIterations && process.hrtime.bigint() < deadline) {
    if (fresh) Mustache.templateCache?.clear();
    renderContent('email', content, vars);
    n++;
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(
    `${label.padEnd(22)} ${Math.round(n / seconds)
      .toLocaleString('en-US')
      .padStart(9)} renders/s  (${n} renders in ${seconds.toFixed(2)} s, ${((seconds / n) * 1e6).toFixed(1)} µs each)`,
  );
}

export async function run(): Promise<void> {
  console.log('email template, 20 variables, subject + preheader + html + text (text given, so no html-to-text)');
  measure('cached compile', false);
  measure('fresh parse', true);
  console.log('same template without text (text derived from html by html-to-text)');
  const save = content.text;
  content.text = undefined;
  measure('cached, derived text', false, 1000);
  content.text = save;
}
