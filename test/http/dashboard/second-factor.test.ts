// The dashboard's second factor over plain HTTP, with an authenticator app on the other side
// (otplib, on the daemon's clock): setting up an app, a login that then needs its code, a code
// good once, a recovery code good once, wrong codes counted by the login throttle, the owner's rule
// that every operator must have one (and what a session without one may still do), an owner's reset
// of a lost phone (and the CLI's, for an owner's own), and the sign-in method in the audit log.
import { authenticator } from 'otplib';
import t, { type Test } from 'tap';
import type { TestDaemon } from '../../helpers/daemon.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { dashboardLogin, OWNER, type DashboardClient } from '../../helpers/dashboard.js';
import { testDatabases } from '../../helpers/databases.js';

const MEMBER = { email: 'member@postern.test', password: 'another long password' };
const STEP = 30_000;

/** The code the app shows now, on the daemon's clock. */
const appCode = (daemon: TestDaemon, secret: string) => authenticator.clone({ epoch: daemon.clock.now().getTime() }).generate(secret);

async function login(daemon: TestDaemon, body: Record<string, string>) {
  const res = await fetch(`${daemon.url}/dashboard/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any, cookie: (res.headers.get('set-cookie') ?? '').split(';')[0] };
}

/** Sets up an app for the client's operator; answers its secret and the recovery codes. */
async function setUpApp(t: Test, daemon: TestDaemon, client: DashboardClient) {
  const begun = await client.request('POST', '/dashboard/api/account/second-factor/totp', {});
  t.equal(begun.status, 201, 'a new key');
  t.match(begun.body.qrSvg, /^<svg/, 'with its QR code');
  t.equal(new URL(begun.body.uri).searchParams.get('secret'), begun.body.secret, 'the URI carries the key');
  const confirmed = await client.request('POST', '/dashboard/api/account/second-factor/totp/confirm', {
    code: appCode(daemon, begun.body.secret),
  });
  t.equal(confirmed.status, 200, 'confirmed with a code of the app');
  return { secret: begun.body.secret as string, recoveryCodes: confirmed.body.recoveryCodes as string[] };
}

for (const db of testDatabases()) {
  t.test(`an authenticator app, its codes and its recovery codes (${db})`, async (t) => {
    // Room for this walk's deliberate failures; the throttle's own test is the next one.
    const daemon = await bootDaemon(t, { db, env: { POSTERN_DASHBOARD_LOGIN_FAILURES_PER_ACCOUNT: '50' } });
    await daemon.workspace('acme');
    const owner = await dashboardLogin(daemon);
    t.equal(owner.me.signedInWith, 'password');

    // Set up, but not confirmed: the login does not ask for it yet.
    const begun = await owner.request('POST', '/dashboard/api/account/second-factor/totp', {});
    const wrong = await owner.request('POST', '/dashboard/api/account/second-factor/totp/confirm', { code: '000000' });
    t.equal(wrong.status, 422, 'a wrong first code is refused');
    t.match(wrong.body.error.issues, [{ path: 'code' }]);
    t.equal((await login(daemon, OWNER)).status, 200, 'an app not confirmed is not asked for');
    const stored = await daemon.app.db.selectFrom('operator_totp').select('secret').executeTakeFirstOrThrow();
    t.notOk(stored.secret.includes(begun.body.secret), 'the key is sealed at rest');
    t.match(stored.secret, /^v1:/);

    const confirmed = await owner.request('POST', '/dashboard/api/account/second-factor/totp/confirm', {
      code: appCode(daemon, begun.body.secret),
    });
    t.equal(confirmed.status, 200);
    const codes: string[] = confirmed.body.recoveryCodes;
    t.equal(codes.length, 10, 'ten recovery codes');
    t.ok(
      codes.every((c) => /^[a-z2-7]{5}-[a-z2-7]{5}$/.test(c)),
      'written as two groups of five',
    );
    t.equal(new Set(codes).size, 10);
    t.match((await owner.request('GET', '/dashboard/api/account/second-factor')).body, {
      totp: true,
      recoveryCodesLeft: 10,
      required: false,
    });
    const secret: string = begun.body.secret;

    // The login now needs the code.
    const asked = await login(daemon, OWNER);
    t.equal(asked.status, 401, 'the password alone no longer signs in');
    t.equal(asked.body.error.secondFactor, 'totp', 'and the answer says a code is needed');
    t.equal(asked.cookie, '', 'no session');
    t.equal(
      (await login(daemon, { ...OWNER, password: 'wrong password!', code: appCode(daemon, secret) })).status,
      401,
      'a code does not stand in for the password',
    );
    const code = appCode(daemon, secret);
    t.equal((await login(daemon, { ...OWNER, code: code === '123456' ? '654321' : '123456' })).status, 401, 'a wrong code');
    // The confirming code's step is spent: the next step's code signs in.
    daemon.clock.advance(STEP);
    const now = appCode(daemon, secret);
    const signed = await login(daemon, { ...OWNER, code: now });
    t.equal(signed.status, 200, 'the password and a code sign in');
    t.equal(signed.body.signedInWith, 'password+totp');
    const replay = await login(daemon, { ...OWNER, code: now });
    t.equal(replay.status, 401, 'the same code is good once');
    t.match(replay.body.error.message, /already used/);
    daemon.clock.advance(STEP);
    t.equal((await login(daemon, { ...OWNER, code: ` ${appCode(daemon, secret)} ` })).status, 200, 'spaces around a code do not matter');

    // Recovery codes: once each, in any case and grouping.
    const recovered = await login(daemon, { ...OWNER, recoveryCode: codes[0].toUpperCase().replace('-', ' ') });
    t.equal(recovered.status, 200, 'a recovery code signs in');
    t.equal(recovered.body.signedInWith, 'password+recovery-code');
    t.equal((await login(daemon, { ...OWNER, recoveryCode: codes[0] })).status, 401, 'once');
    t.match((await owner.request('GET', '/dashboard/api/account/second-factor')).body, { recoveryCodesLeft: 9 });

    // Changing the factor needs the factor; a wrong one is a 403, not the end of the session.
    const noProof = await owner.request('POST', '/dashboard/api/account/second-factor/recovery-codes', {});
    t.equal(noProof.status, 403, 'none');
    t.equal(noProof.body.error.secondFactor, 'totp');
    const badProof = await owner.request('POST', '/dashboard/api/account/second-factor/remove', { code: '000000' });
    t.equal(badProof.status, 403, 'a wrong code when removing it');
    t.equal((await owner.request('GET', '/dashboard/api/me')).status, 200, 'the session goes on');
    daemon.clock.advance(STEP);
    const renewed = await owner.request('POST', '/dashboard/api/account/second-factor/recovery-codes', { code: appCode(daemon, secret) });
    t.equal(renewed.status, 200, 'new recovery codes');
    t.equal((await login(daemon, { ...OWNER, recoveryCode: codes[1] })).status, 401, 'the old ones are gone');
    t.equal((await login(daemon, { ...OWNER, recoveryCode: renewed.body.recoveryCodes[0] })).status, 200, 'the new ones work');

    const audit = await daemon.app.audit.list({ operator: OWNER.email });
    const logins = audit.data.filter((e) => e.action === 'session.login');
    t.same(
      [...new Set(logins.filter((e) => e.outcome === 'ok').map((e) => e.target))].sort(),
      ['password', 'password+recovery-code', 'password+totp'],
      'the audit log names how each login signed in',
    );
    t.ok(
      logins.some((e) => e.outcome === 'unauthorized'),
      'a wrong code is a failed login in the audit log',
    );
    t.ok(
      audit.data.some((e) => e.action === 'second-factor.set-up' && e.outcome === 'ok'),
      'setting it up is audited',
    );

    daemon.clock.advance(STEP);
    const removed = await owner.request('POST', '/dashboard/api/account/second-factor/remove', { code: appCode(daemon, secret) });
    t.equal(removed.status, 200, 'removed with a code');
    t.match(removed.body, { totp: false, recoveryCodesLeft: 0 });
    t.equal((await login(daemon, OWNER)).status, 200, 'the password alone signs in again');
  });

  t.test(`wrong codes count as failed logins (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db, env: { POSTERN_DASHBOARD_LOGIN_FAILURES_PER_ACCOUNT: '3' } });
    const owner = await dashboardLogin(daemon);
    const { secret } = await setUpApp(t, daemon, owner);
    const code = appCode(daemon, secret);
    const wrongCode = code === '111111' ? '222222' : '111111';
    t.equal((await login(daemon, OWNER)).status, 401, 'being asked for the code is not a failure');
    t.equal((await login(daemon, OWNER)).status, 401);
    for (let i = 0; i < 3; i++) t.equal((await login(daemon, { ...OWNER, code: wrongCode })).status, 401, `wrong code ${i + 1}`);
    daemon.clock.advance(STEP);
    const throttled = await login(daemon, { ...OWNER, code: appCode(daemon, secret) });
    t.equal(throttled.status, 429, 'after the limit even the right code waits');
  });

  t.test(`the owner's rule: every operator has a second factor (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    const ws = await daemon.workspace('acme');
    const owner = await dashboardLogin(daemon);
    const early = await owner.request('PUT', '/dashboard/api/security', { requireSecondFactor: true });
    t.equal(early.status, 409, 'not before the owner has one');
    t.match(early.body.error.message, /your own authenticator app/);
    await setUpApp(t, daemon, owner);
    t.equal((await owner.request('PUT', '/dashboard/api/security', { requireSecondFactor: true })).status, 200, 'required');
    t.same((await owner.request('GET', '/dashboard/api/security')).body, { requireSecondFactor: true });

    await daemon.app.operators.create({ ...MEMBER, role: 'member', workspaces: [ws.id] });
    const member = await dashboardLogin(daemon, MEMBER, false);
    t.equal(member.me.mustSetUpSecondFactor, true, 'a member without one signs in, to set one up');
    const refused = await member.request('GET', '/dashboard/api/overview');
    t.equal(refused.status, 403, 'and can open nothing else');
    t.equal(refused.body.error.secondFactor, 'set-up');
    const v1 = await member.request('GET', '/v1/context');
    t.equal(v1.status, 403, 'the API with the session cookie neither');
    const view = await member.request('GET', '/dashboard/view/templates/x');
    t.equal(view.status, 403, 'nor a sandboxed view');
    t.equal((await member.request('GET', '/dashboard/api/me')).status, 200, 'who am I still answers');
    const members = await owner.request('GET', '/dashboard/api/operators');
    t.same(
      members.body.data.map((o: any) => [o.email, o.secondFactor]).sort(),
      [
        [MEMBER.email, false],
        [OWNER.email, true],
      ],
      'the owners see who has one',
    );

    const { secret } = await setUpApp(t, daemon, member);
    const me = await member.request('GET', '/dashboard/api/me');
    t.equal(me.body.mustSetUpSecondFactor, false, 'once set up, the same session goes on');
    t.equal((await member.request('GET', '/v1/context')).status, 200, 'and reaches the API');

    // A lost phone: the owner resets it; the member signs in with the password and must set up again.
    const memberId = members.body.data.find((o: any) => o.email === MEMBER.email).id;
    const reset = await owner.request('POST', `/dashboard/api/operators/${memberId}/second-factor/reset`, {});
    t.equal(reset.status, 200);
    t.equal(reset.body.secondFactor, false);
    daemon.clock.advance(STEP);
    t.not(appCode(daemon, secret), '', 'the old app still shows codes');
    const again = await login(daemon, MEMBER);
    t.equal(again.status, 200, 'the password signs in after the reset');
    t.equal(again.body.mustSetUpSecondFactor, true, 'to set up a new app, as the rule says');
    const byMember = await member.request('POST', `/dashboard/api/operators/${memberId}/second-factor/reset`, {});
    t.equal(byMember.status, 403, 'only an owner resets another');

    // The owner's own lost phone, on the server: `postern operator reset-second-factor`.
    const cli = await daemon.cli('operator', 'reset-second-factor', '--email', OWNER.email);
    t.equal(cli.code, 0, cli.stderr);
    t.same(cli.json, { email: OWNER.email, secondFactor: false });
    const ownerAgain = await login(daemon, OWNER);
    t.equal(ownerAgain.status, 200, 'after the reset the password signs the owner in');
    t.equal(ownerAgain.body.mustSetUpSecondFactor, true, 'to set up a new app');
    t.ok(
      (await daemon.app.audit.list({})).data.some(
        (e) => e.action === 'operator.second-factor-reset' && e.target === OWNER.email && e.operator.email === 'cli',
      ),
      'the reset is audited as the CLI',
    );
    t.equal((await daemon.cli('operator', 'reset-second-factor', '--email', 'nobody@postern.test')).code, 1, 'an unknown operator');
    await setUpApp(t, daemon, owner);

    t.equal((await owner.request('PUT', '/dashboard/api/security', { requireSecondFactor: false })).status, 200);
    const free = await login(daemon, MEMBER);
    t.equal(free.body.mustSetUpSecondFactor, false, 'without the rule the password alone is enough');
    t.equal((await owner.request('PUT', '/dashboard/api/security', { requireSecondFactor: 'yes' })).status, 422, 'a boolean');
  });
}
