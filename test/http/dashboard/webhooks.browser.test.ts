// Webhooks in the browser: add an endpoint (every event type offered, the secret shown once), an event reaches the loopback
// receiver and shows in the delivery log with the request and response of its attempt, a replay
// delivers it again, the secret rotates (the new one shown once), and the endpoint is disabled,
// enabled and deleted.
import t from 'tap';
import { EVENT_TYPES } from '../../../src/contract/webhooks.js';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startReceiver, verify } from '../../helpers/webhook-receiver.js';
import { emit, sampleMessage, tick } from '../../helpers/webhooks.js';

for (const db of testDatabases()) {
  t.test(`endpoint lifecycle and the delivery log (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db, env: { POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    const ws = await daemon.workspace('acme');
    const receiver = await startReceiver(() => 200);
    t.teardown(() => receiver.close());
    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, daemon);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    const form = page.getByRole('form', { name: 'Add an endpoint' });
    await form.waitFor();
    const offered = await form
      .getByRole('group', { name: 'Events' })
      .getByRole('checkbox')
      .evaluateAll((boxes) => boxes.map((b) => b.parentElement?.textContent?.trim()));
    t.same(offered, [...EVENT_TYPES], 'the form offers every event type an endpoint may subscribe to, report.dmarc and report.tls too');
    await checkPage(t, page, 'webhooks-empty');
    await form.getByLabel('URL').fill(receiver.url);
    await form.getByLabel('Description (optional)').fill('billing hooks');
    await form.getByRole('checkbox', { name: 'message.delivered' }).check();
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    const secretBox = page.locator('[data-secret]');
    await secretBox.waitFor();
    const secret = (await secretBox.textContent())!.trim();
    t.match(secret, /^whsec_/, 'the signing secret is shown once');
    await checkPage(t, page, 'webhooks-secret-once');
    await page.getByRole('button', { name: 'I have copied it' }).click();
    t.notOk((await page.content()).includes(secret), 'and is gone once dismissed');

    await page.getByRole('link', { name: receiver.url }).click();
    await page.getByRole('heading', { name: 'Delivery log' }).waitFor();
    await page.getByText('No delivery yet.').waitFor();

    await emit(daemon, ws.id, 'message.delivered', sampleMessage(1));
    await tick(daemon);
    await receiver.waitFor(1);
    t.ok(verify(secret, receiver.requests[0]), 'the receiver verifies the signature with the secret the page showed');

    await page.getByRole('button', { name: 'Refresh' }).click();
    const row = page.getByRole('row', { name: /message\.delivered/ });
    await row.waitFor();
    t.match(await row.textContent(), /HTTP 200/, 'the log shows the response');
    await row.getByRole('button', { name: /Show attempts/ }).click();
    const details = page.getByRole('region', { name: /Delivery dlv_/ });
    await details.waitFor();
    // The attempts are fetched once the row opens: wait for the first of them to be drawn.
    await details.getByText(`POST ${receiver.url}`).first().waitFor();
    const text = (await details.textContent())!;
    t.match(text, `POST ${receiver.url}`, 'the request line');
    t.match(text, `webhook-id: ${receiver.requests[0].id}`, 'the request headers');
    t.match(text, 'HTTP 200', 'the response');
    await details.getByText('"recipient": "someone@example.com"').first().waitFor();
    const sent = JSON.parse(receiver.requests[0].body);
    t.match(
      (await details.locator('pre').first().textContent())!.replace(/\s+/g, ''),
      JSON.stringify(sent).replace(/\s+/g, ''),
      'the request body shown is the body the receiver got',
    );
    await checkPage(t, page, 'webhooks-delivery-log');

    await row.getByRole('button', { name: /Replay/ }).click();
    await page.getByText(/queued to be sent again/).waitFor();
    await tick(daemon);
    await receiver.waitFor(2);
    t.equal(receiver.requests[1].id, receiver.requests[0].id, 'the replay carries the same webhook-id');
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page
      .getByRole('row', { name: /message\.delivered/ })
      .getByRole('cell', { name: '2', exact: true })
      .waitFor();
    t.ok(true, 'the log counts two attempts');

    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rotate', exact: true }).click();
    await page.locator('[data-secret]').waitFor();
    const rotated = (await page.locator('[data-secret]').textContent())!.trim();
    t.not(rotated, secret, 'a new secret');
    await page.getByText('Previous secret valid until').waitFor();
    await checkPage(t, page, 'webhooks-rotated');
    await page.getByRole('button', { name: 'I have copied it' }).click();

    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('button', { name: 'Enable' }).waitFor();
    const id = page.url().split('/').pop()!;
    t.equal((await daemon.request('GET', `/v1/webhooks/${id}`, { key: ws.live })).body.enabled, false, 'disabled');
    await checkPage(t, page, 'webhooks-disabled');
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('button', { name: 'Disable' }).waitFor();

    await page.getByRole('button', { name: 'Delete endpoint' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    t.same((await daemon.request('GET', '/v1/webhooks', { key: ws.live })).body.data, [], 'deleted');

    // A vendor format: the event checks give way to the format's own events, and the endpoint's
    // page shows the key its signatures verify with.
    await form.getByLabel('URL').fill(`${receiver.url}/sendgrid`);
    await form.getByLabel('Payload format').selectOption('sendgrid');
    await form.getByText('Every event this format has a shape for is sent').waitFor();
    t.equal(await form.getByRole('checkbox', { name: 'message.delivered' }).count(), 0, 'no event checks');
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await page.getByRole('link', { name: `${receiver.url}/sendgrid` }).click();
    await page.getByText('SendGrid Event Webhook (signed with ECDSA)').waitFor();
    const [created] = (await daemon.request('GET', '/v1/webhooks', { key: ws.live })).body.data;
    t.match(created, { format: 'sendgrid', events: ['*'] });
    await page.getByText(created.verificationKey, { exact: true }).waitFor();
    await checkPage(t, page, 'webhooks-sendgrid');
  });
}
