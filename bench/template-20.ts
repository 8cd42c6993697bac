// The email template of 20 variables that the render and template-send benchmarks use, with its
// variables: subject, preheader, an HTML table of every variable and a text version of it.
import type { EmailContent } from '../src/contract/channels.js';

const names = Array.from({ length: 20 }, (_, i) => `v${i}`);

export const template20: EmailContent = {
  subject: 'Order {{v0}} for {{v1}}',
  preheader: 'Hello {{v1}}, your order {{v0}} is on its way',
  html: `<html><body><h1>Hello {{v1}}</h1><table>${names.map((n) => `<tr><td>${n}</td><td>{{${n}}}</td></tr>`).join('')}</table><p>Thanks, {{v19}}</p></body></html>`,
  text: `Hello {{v1}}\n${names.map((n) => `${n}: {{${n}}}`).join('\n')}\n`,
};

export const vars20: Record<string, string> = Object.fromEntries(names.map((n, i) => [n, `value <${i}> & more`]));
