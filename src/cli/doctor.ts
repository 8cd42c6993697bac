// `postern doctor [--domain D] [--json]`: the checks of domains/doctor.ts for the host and every
// claimed custom domain (or one), as a table a person reads or as JSON; exit code 1 when any fails.
import type { Check, DoctorReport } from '../domains/index.js';
import { AppError } from '../lib/errors.js';
import type { Command, Io } from './command.js';
import { CommandFailure, optional } from './command.js';

const LABEL = { pass: 'PASS', warn: 'WARN', fail: 'FAIL' } as const;

function lines(checks: Check[]): string[] {
  const width = Math.max(...checks.map((c) => c.name.length)) + 2;
  return checks.flatMap((c) => [
    `  ${LABEL[c.status]}  ${c.name.padEnd(width)}${c.detail}`,
    ...(c.fix ? [`  ${' '.repeat(6 + width)}publish: ${c.fix.name} ${c.fix.type} ${c.fix.value}`] : []),
  ]);
}

/** The report for a person: the host, then each domain, then the counts. */
function formatReport(report: DoctorReport): string {
  const all = [...report.host, ...report.domains.flatMap((d) => d.checks)];
  const count = (s: Check['status']) => all.filter((c) => c.status === s).length;
  return [
    'host',
    ...lines(report.host),
    ...report.domains.flatMap((d) => ['', `${d.domain} (workspace ${d.workspace})`, ...lines(d.checks)]),
    ...(report.domains.length === 0 ? ['', 'no custom domain is claimed'] : []),
    '',
    `${count('fail')} failed, ${count('warn')} warned, ${count('pass')} passed`,
  ]
    .join('\n')
    .concat('\n');
}

export const doctorCommands: Command[] = [
  {
    name: 'doctor',
    usage: '[--domain D] [--json]',
    summary: 'check the DNS, reverse DNS and certificate receivers judge, for the host and each custom domain; exit 1 when any check fails',
    options: { domain: { type: 'string' }, json: { type: 'boolean' } },
    run: async (app, { values }) => {
      const domain = optional(values, 'domain');
      try {
        return await app.doctor.run({ domain });
      } catch (err) {
        // Exit 1 means a check failed; a domain that is not claimed is the operator's typo (2).
        if (err instanceof AppError && err.code === 'not_found') throw new CommandFailure(`no custom domain ${domain} is claimed`);
        throw err;
      }
    },
    print: (result: unknown, io: Io, values) => {
      const report = result as DoctorReport;
      io.out(values.json === true ? JSON.stringify(report, null, 2) + '\n' : formatReport(report));
      return report.status === 'fail' ? 1 : 0;
    },
  },
];
