// The edges of the RCPT policy that test/inbound/routing.test.ts does not walk: the report address,
// a custom domain's own return path (VERP addresses only, once confirmed, and seen at once after a
// change), an smtp.postmasterAddress Postern does not serve, a full postmaster mailbox, and a
// recipient lookup that fails (451: the sender keeps the message and retries).
import { mkdirSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { createRouter } from '../../src/inbound/routing.js';
import { POSTMASTER_MAX_BYTES } from '../../src/smtp/postmaster.js';
import { testDatabases } from '../helpers/databases.js';
import { createAddress, RawSmtp, setup, simpleMail, type InboundEnv } from '../helpers/inbound.js';
import { until } from '../helpers/until.js';

/** A custom domain row of the workspace's, with what the test sets on top. */
async function customDomain(env: InboundEnv, id: string, domain: string, extra: Record<string, string | null> = {}) {
  await env.d.app.db
    .insertInto('domains')
    .values({
      id,
      workspace_id: env.ws.id,
      domain,
      kind: 'custom',
      status: 'verified',
      dkim_selector: null,
      dkim_private_key: null,
      dkim_public_key: null,
      verified_at: null,
      dkim_verified_at: null,
      mx_verified_at: null,
      return_path_verified_at: null,
      records_drift: null,
      records_drift_since: null,
      created_at: '2020-01-01T00:00:00.000Z',
      deleted_at: null,
      ...extra,
    })
    .execute();
}

/** The reply to each RCPT TO in one SMTP session. */
async function rcptReplies(env: InboundEnv, rcpts: string[]): Promise<string[]> {
  const c = await RawSmtp.connect(env.d.smtpPort);
  try {
    await c.cmd('EHLO client.example.org');
    await c.cmd('MAIL FROM:<reporter@example.org>');
    const replies: string[] = [];
    for (const rcpt of rcpts) replies.push(await c.cmd(`RCPT TO:<${rcpt}>`));
    return replies;
  } finally {
    c.close();
  }
}

for (const db of testDatabases()) {
  t.test(`the report address and a custom domain's return path (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { d } = env;
    const router = createRouter({ config: d.app.config, db: d.app.db, bus: d.app.bus, clock: d.clock });
    const bounceDomain = `bounces.${d.app.config.hostname}`;

    t.same(await router.resolve(`reports@${bounceDomain}`), { kind: 'report', rcpt: `reports@${bounceDomain}` }, 'the report address');
    t.same(await router.resolve(`Reports@${bounceDomain.toUpperCase()}`), {
      kind: 'report',
      rcpt: `Reports@${bounceDomain.toUpperCase()}`,
    });
    t.same(
      await router.resolve(`reports+x@${bounceDomain}`),
      { kind: 'bounce', rcpt: `reports+x@${bounceDomain}` },
      'anything else: a bounce',
    );

    await customDomain(env, 'acme-custom', 'acme.example');
    const verp = 'bounces+msg_0a1b2c';
    const at = (local: string) => `${local}@bounces.acme.example`;
    const changed = () => d.app.bus.publish('domains.changed', null);
    t.equal(await router.resolve(at(verp)), null, 'a return path not confirmed is not served');

    await d.app.db
      .updateTable('domains')
      .set({ return_path_verified_at: '2020-01-02T00:00:00.000Z' })
      .where('id', '=', 'acme-custom')
      .execute();
    changed();
    t.same(await router.resolve(at(verp)), { kind: 'bounce', rcpt: at(verp) }, 'confirmed: seen at once after domains.changed');
    for (const local of [verp, 'BOUNCES+MSG_0A1B2C', 'bounces+msg_a']) {
      t.match(await router.resolve(at(local)), { kind: 'bounce' }, `a VERP address: ${local}`);
    }
    t.match(await router.resolve(`${verp}@Bounces.ACME.example.`), { kind: 'bounce' }, 'the domain in any case, with a trailing dot');
    for (const local of [
      'xbounces+msg_0a1b2c',
      'bounces+msg_0a1b2c-1',
      'bounces+msg_0a1b2c+x',
      'bounces+msg_',
      'bounces',
      'postmaster',
      'reports',
    ]) {
      t.equal(await router.resolve(at(local)), null, `not a VERP address: ${local}`);
    }
    t.same(
      await rcptReplies(env, [at(verp), at('someone')]),
      ['250 2.1.5 Accepted', `550 5.7.1 <${at('someone')}>: relay access denied`],
      'the same answers over SMTP',
    );

    // A served domain whose name is eight characters and then the return path's domain is not a
    // return path: only a name that starts with `bounces.` is looked up as one.
    await customDomain(env, 'look-alike', 'mail0000acme.example', { mx_verified_at: '2020-01-02T00:00:00.000Z' });
    changed();
    t.match(await router.resolve('someone@mail0000acme.example'), { kind: 'mailbox', workspaceId: env.ws.id }, 'served as a mailbox');

    await d.app.db.updateTable('domains').set({ status: 'failed' }).where('id', '=', 'acme-custom').execute();
    changed();
    t.equal(await router.resolve(at(verp)), null, 'a failed domain');
    await d.app.db
      .updateTable('domains')
      .set({ status: 'verified', deleted_at: '2021-01-01T00:00:00.000Z' })
      .where('id', '=', 'acme-custom')
      .execute();
    changed();
    t.equal(await router.resolve(at(verp)), null, 'a deleted domain');
  });

  t.test(`an smtp.postmasterAddress Postern does not serve: postmaster mail goes to the mailbox (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_SMTP_POSTMASTER_ADDRESS: 'ops@unserved.example' } });
    const c = await RawSmtp.connect(env.d.smtpPort);
    t.teardown(() => c.close());
    await c.cmd('EHLO client.example.org');
    await c.cmd('MAIL FROM:<reporter@example.org>');
    t.match(await c.cmd('RCPT TO:<postmaster>'), /^250 /);
    t.match(await c.cmd('DATA'), /^354/);
    t.match(await c.cmd(simpleMail({ to: 'postmaster', subject: 'Lost operator' }) + '.'), /^250 /);
    t.ok(
      env.d.logs.some((l) => l.includes('smtp.postmasterAddress is not an address Postern serves') && l.includes('ops@unserved.example')),
      'a warning names the address',
    );
    const dir = path.join(env.d.dataDir, 'postmaster', 'new');
    const files = readdirSync(dir);
    t.equal(files.length, 1, 'in the postmaster mailbox');
    t.match(readFileSync(path.join(dir, files[0]), 'utf8'), /Subject: Lost operator/);
  });

  t.test(`a full postmaster mailbox answers 452 and takes nothing (${db})`, async (t) => {
    const env = await setup(t, { db });
    // The mailbox already holds its limit (a sparse file: its size is what counts).
    const dir = path.join(env.d.dataDir, 'postmaster', 'new');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'old-mail'), '');
    truncateSync(path.join(dir, 'old-mail'), POSTMASTER_MAX_BYTES);
    const [reply] = await rcptReplies(env, ['postmaster']);
    t.match(reply, /^4\d\d 4\.\d\.\d /, 'a temporary refusal');
    t.match(reply, /postmaster/i, 'naming the postmaster mailbox');
    t.same(readdirSync(dir), ['old-mail'], 'nothing added');
    t.notOk(
      env.d.logs.some((l) => l.includes('smtp.postmasterAddress')),
      'no smtp.postmasterAddress set: nothing said of one',
    );
  });

  t.test(`a recipient lookup that fails answers 451, and the retry is accepted (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { d } = env;
    const { address } = await createAddress(env, { localPart: 'inbox' });
    const rename = async (from: string, to: string) => {
      await d.app.db.schema.alterTable(from).renameTo(to).execute();
    };
    await rename('inbound_addresses', 'inbound_addresses_away');
    const [refused] = await rcptReplies(env, [address]);
    t.match(refused, /^451 4\.\d\.\d /, 'a temporary failure');
    await until('the failure logged', () => d.logs.some((l) => l.includes('recipient lookup failed')));
    await rename('inbound_addresses_away', 'inbound_addresses');
    const [retried] = await rcptReplies(env, [address]);
    t.match(retried, /^250 /, 'the retry is accepted');
  });
}
