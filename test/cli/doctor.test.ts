// `postern doctor`, the real binary on the daemon's data: the table a person reads, --json, and the
// exit code (1 when a check fails, 2 for a domain that is not claimed).
import t from 'tap';
import { reverseName } from '../../src/domains/doctor.js';
import { setup } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';
import { runBin } from '../helpers/run-bin.js';

const IP = '203.0.113.10';
const HOST = 'mx.postern.test';

for (const db of testDatabases()) {
  t.test(`postern doctor (${db})`, async (t) => {
    const e = await setup(t, { db, env: { POSTERN_DOCTOR_PUBLIC_IPS: IP } });
    const { d, dns } = e;
    const claim = await d.request('POST', '/v1/inbound/domains', { key: e.ws.live, body: { domain: 'acme.example' } });
    const dkim = claim.body.records[1] as { name: string; value: string };
    const doctor = (...args: string[]) => runBin(['doctor', ...args], { env: { ...d.env, POSTERN_LOG_LEVEL: 'warn' } });

    // Nothing published: failures, each with the record to publish; exit 1.
    const bare = await doctor();
    t.equal(bare.code, 1, bare.stderr);
    t.match(bare.stdout, /^host\n/);
    t.match(bare.stdout, /FAIL {2}fcrdns +203\.0\.113\.10 has no PTR record/);
    t.match(bare.stdout, new RegExp(`publish: ${reverseName(IP).replace(/\./g, '\\.')} PTR mx\\.postern\\.test`));
    t.match(bare.stdout, /\nacme\.example \(workspace acme\)\n/);
    t.match(bare.stdout, /FAIL {2}dkim/);
    t.ok(bare.stdout.includes(`publish: ${dkim.name} TXT ${dkim.value}`), 'the DKIM record the claim lists');
    t.match(bare.stdout, /\n\d+ failed, \d+ warned, \d+ passed\n$/);

    // Everything published: no failure, exit 0 (the self-signed certificate only warns).
    dns.set('acme.example', [
      { type: 'MX', data: { preference: 10, exchange: HOST } },
      { type: 'TXT', data: `v=spf1 ip4:${IP} -all` },
    ]);
    dns.set(dkim.name, [{ type: 'TXT', data: dkim.value }]);
    dns.set('_dmarc.acme.example', [{ type: 'TXT', data: 'v=DMARC1; p=none' }]);
    dns.set(reverseName(IP), [{ type: 'PTR', data: HOST }]);
    dns.set(HOST, [{ type: 'A', data: IP }]);
    dns.set(`bounces.${HOST}`, [
      { type: 'MX', data: { preference: 10, exchange: HOST } },
      { type: 'TXT', data: `v=spf1 a:${HOST} -all` },
    ]);
    dns.set('bounces.acme.example', [
      { type: 'MX', data: { preference: 10, exchange: HOST } },
      { type: 'TXT', data: `v=spf1 a:${HOST} -all` },
    ]);
    const good = await doctor();
    t.equal(good.code, 0, good.stdout + good.stderr);
    t.match(good.stdout, /WARN {2}certificate +the SMTP certificate is self-signed/);
    t.match(good.stdout, /\n0 failed, 1 warned, 12 passed\n$/);
    t.notMatch(good.stdout, /publish:/);

    // --json for machines, and --domain for one.
    const json = await doctor('--json', '--domain', 'acme.example');
    t.equal(json.code, 0);
    const report = JSON.parse(json.stdout);
    t.match(report, { status: 'warn', domains: [{ domain: 'acme.example', workspace: 'acme', status: 'pass' }] });
    t.equal(report.domains[0].checks.length, 8);

    // One record wrong: exit 1, and the JSON says which.
    dns.set('_dmarc.acme.example', [{ type: 'TXT', data: 'v=DMARC1; p=maybe' }]);
    const wrong = await doctor('--json');
    t.equal(wrong.code, 1);
    const failed = JSON.parse(wrong.stdout).domains[0].checks.filter((c: { status: string }) => c.status === 'fail');
    t.match(failed, [{ name: 'dmarc', detail: /no valid p= policy/ }]);

    const unknown = await doctor('--domain', 'nowhere.example');
    t.equal(unknown.code, 2);
    t.match(unknown.stderr, /no custom domain nowhere\.example is claimed/);
  });
}
