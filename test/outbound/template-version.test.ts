// A template send is rendered from the version resolved when it was accepted: the content is copied
// onto the message then (docs/templates.md, "Which version is used"), so publishing a new version
// never changes a message already accepted. The send is scheduled an hour ahead so the template
// changes land while it waits in the queue; the live email transport is the capture transport.
import t from 'tap';
import { createCaptureTransport } from '../helpers/capture-transport.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`a template published after accept does not change the message on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db });
    const acme = await d.workspace('acme', { plan: 'pro' });
    const req = (method: string, path: string, body?: unknown) => d.request(method, path, { key: acme.live, body });
    const draft = (subject: string) =>
      req('PUT', '/v1/templates/welcome/draft', { content: { subject, text: 'Hello {{name}}' }, variables: [] });
    const publish = () => req('POST', '/v1/templates/welcome/publish');
    const cap = createCaptureTransport();
    d.app.outbound.registerTransport('email', cap);

    t.equal((await req('POST', '/v1/templates', { slug: 'welcome', channel: 'email' })).status, 201);
    t.equal((await draft('v1 for {{name}}')).status, 200);
    t.equal((await publish()).status, 200);
    t.equal((await draft('v2 draft for {{name}}')).status, 200, 'a draft exists at accept: the live send ignores it');
    const scheduledAt = new Date(d.clock.now().getTime() + 3600_000).toISOString();
    const sent = await req('POST', '/v1/send', { template: 'welcome', to: 'ann@example.com', vars: { name: 'Ann' }, scheduledAt });
    t.equal(sent.status, 202, JSON.stringify(sent.body));

    // While it waits: v2 is edited and published, and a v3 draft opened.
    t.equal((await draft('v2 for {{name}}')).status, 200);
    t.equal((await publish()).status, 200);
    t.equal((await draft('v3 draft for {{name}}')).status, 200);
    const now = await req('POST', '/v1/templates/welcome/render', { vars: { name: 'Ann' } });
    t.equal(now.body.output.subject, 'v2 for Ann', 'the template itself moved on to v2');

    d.clock.advance(2 * 3600_000);
    await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    t.equal(cap.deliveries.length, 1);
    t.equal((cap.deliveries[0].content as { subject: string }).subject, 'v1 for Ann', 'rendered from v1, the version current at accept');
    t.match((await req('GET', `/v1/messages/${sent.body.id}`)).body, { status: 'delivered', templateSlug: 'welcome', pinnedVersion: null });
  });
}
