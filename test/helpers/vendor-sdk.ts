// What the tests of the hosted vendors' APIs (test/compat/) share: a daemon delivering to a
// loopback MX, a workspace with a verified, DKIM-signing domain acme.example, and the checks of
// what reaches the MX by tools we did not write (Python's email package, dkimpy).
import type { Test } from 'tap';
import { bootDaemon, type TestDaemon } from './daemon.js';
import type { TestDb } from './databases.js';
import { addVerifiedDomain, startRemoteMx, type Received } from './smtp-sink.js';
import { until } from './until.js';
import { startWireChecker } from './wire-check.js';

export interface VendorSetup {
  d: TestDaemon;
  ws: { id: string; slug: string; live: string; test: string };
  /** A message through /v1, as a client of Postern's own API reads it. */
  message(id: string): Promise<{ status: number; body: any }>;
  /** Publishes an email template `slug` with `subject` and `text` (Mustache). */
  template(slug: string, subject: string, text: string): Promise<void>;
  /** The copy for `to` at the MX. */
  copyFor(to: string): Promise<Received>;
  /** Checks each recipient's copy whole and signed by acme.example: from Acme App <app@acme.example>. */
  deliveredWhole(
    t: Test,
    recipients: string[],
    expected: {
      replyTo: string;
      subject: string;
      text: string;
      html: string;
      attachments: { filename: string; contentType: string; content: string }[];
    },
  ): Promise<void>;
}

export async function vendorSetup(t: Test, db: TestDb): Promise<VendorSetup> {
  const checker = startWireChecker(t);
  const mx = await startRemoteMx(t, { domains: ['example.net'] });
  const d = await bootDaemon(t, { db, env: mx.env });
  const ws = await d.workspace('acme', { plan: 'pro' });
  const txt = await addVerifiedDomain(d.app, ws.id, 'acme.example');
  mx.dns.set('postern._domainkey.acme.example', [{ type: 'TXT', data: txt }]);
  checker.publish('postern._domainkey.acme.example', txt);
  const copyFor = (to: string) => until(`the copy for ${to} at the MX`, () => mx.sink.received.find((r: Received) => r.to.includes(to)));
  return {
    d,
    ws,
    copyFor,
    message: (id) => d.request('GET', `/v1/messages/${id}`, { key: ws.live }),
    async template(slug, subject, text) {
      t.ok((await d.request('POST', '/v1/templates', { key: ws.live, body: { slug, channel: 'email' } })).status < 300);
      const draft = { content: { subject, text }, variables: [] };
      t.ok((await d.request('PUT', `/v1/templates/${slug}/draft`, { key: ws.live, body: draft })).status < 300);
      t.ok((await d.request('POST', `/v1/templates/${slug}/publish`, { key: ws.live })).status < 300);
    },
    async deliveredWhole(t, recipients, expected) {
      for (const to of recipients) {
        const problems = await checker.check((await copyFor(to)).raw, {
          from: { address: 'app@acme.example', name: 'Acme App' },
          to: [to],
          cc: [],
          ...expected,
          eightBit: true,
          dkimDomain: 'acme.example',
        });
        t.same(problems, [], `the copy for ${to} is whole and signed by acme.example`);
      }
    },
  };
}
