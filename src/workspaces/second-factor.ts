// Operators' second factor: an authenticator app (TOTP, lib/totp.ts) with ten recovery codes, or a
// passkey (passkeys.ts, which signs in on its own), and the box's rule that every operator must have
// one. The app's secret is sealed under secrets.key
// like every other credential; a code is accepted once (the last step used is kept, and taken with
// a compare-and-swap so two nodes cannot both accept it); a recovery code is spent when used.
import { randomBytes } from 'node:crypto';
import type * as QrCode from 'qrcode';
import type { SignInMethod } from '../db/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../lib/errors.js';
import { lazyRequire } from '../lib/lazy.js';
import { base32, keyUri, matchingStep } from '../lib/totp.js';
import { sha256, type Operator } from './operators.js';

// The QR code renderer is needed only while an operator sets up an app.
const qrcode = lazyRequire<typeof QrCode>('qrcode');

/** What a login or a sensitive change brings besides the password. */
export interface SecondFactorProof {
  code?: string;
  recoveryCode?: string;
}

export interface SecondFactorStatus {
  /** An authenticator app is set up and asked at login. */
  totp: boolean;
  recoveryCodesLeft: number;
  /** Passkeys registered (each signs in on its own). */
  passkeys: number;
  /** The box requires a second factor of every operator. */
  required: boolean;
}

export interface SecondFactors {
  status(operatorId: string): Promise<SecondFactorStatus>;
  /** Has the operator a second factor: an authenticator app set up, or a passkey? */
  enrolled(operatorId: string): Promise<boolean>;
  /** The operators that have one (for the owners' list). */
  enrolledOperators(): Promise<Set<string>>;
  /** A new secret for an authenticator app, asked at login only once confirmed with a code. */
  begin(operator: Operator): Promise<{ secret: string; uri: string; qrSvg: string }>;
  /** Turns the app on with its first code; answers the recovery codes, shown this once. */
  confirm(operatorId: string, code: string): Promise<{ recoveryCodes: string[] }>;
  /** The method a login with this proof signs in by; throws when the operator's factor is not met. */
  check(operatorId: string, proof: SecondFactorProof): Promise<SignInMethod>;
  /** Ten new recovery codes in place of the old ones. */
  renewRecoveryCodes(operatorId: string): Promise<string[]>;
  /** Removes the app and the recovery codes (the operator's own choice). */
  remove(operatorId: string): Promise<void>;
  /** Removes every second factor of an operator, passkeys too (an owner's reset of a lost phone). */
  reset(operatorId: string): Promise<void>;
  required(): Promise<boolean>;
  setRequired(on: boolean): Promise<void>;
}

const ISSUER = 'Postern';
const RECOVERY_CODES = 10;
const REQUIRE = 'require_second_factor';

/** The error a login without its second factor gets; the page asks for the code on `secondFactor`. */
const secondFactorMissing = () =>
  new AppError(
    'unauthorized',
    'this operator signs in with a second factor: send the code from the authenticator app, or a recovery code',
    {
      secondFactor: 'totp',
    },
  );

/** Recovery codes as written down: ten base32 characters in two groups, any case. */
const normalCode = (text: string) => text.replace(/[\s-]/g, '').toUpperCase();

function newRecoveryCode(): string {
  const c = base32(randomBytes(7)).slice(0, 10).toLowerCase();
  return `${c.slice(0, 5)}-${c.slice(5)}`;
}

export function createSecondFactors({ db, clock, box }: Pick<Deps, 'db' | 'clock' | 'box'>): SecondFactors {
  async function recoveryCodesLeft(operatorId: string): Promise<number> {
    const r = await db
      .selectFrom('operator_recovery_codes')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('operator_id', '=', operatorId)
      .where('used_at', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async function writeRecoveryCodes(operatorId: string): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
    await db.transaction().execute(async (trx) => {
      await trx.deleteFrom('operator_recovery_codes').where('operator_id', '=', operatorId).execute();
      await trx
        .insertInto('operator_recovery_codes')
        .values(codes.map((c) => ({ operator_id: operatorId, code_hash: sha256(normalCode(c)), used_at: null })))
        .execute();
    });
    return codes;
  }

  /** Accepts a code of the app once: the step it matched must be later than the last one used. */
  async function takeCode(operatorId: string, secret: Buffer, code: string, lastStep: number | null): Promise<boolean> {
    const step = matchingStep(secret, code.trim(), clock.now().getTime());
    if (step === null || (lastStep !== null && step <= lastStep)) return false;
    let update = db.updateTable('operator_totp').set({ last_step: step }).where('operator_id', '=', operatorId);
    update = lastStep === null ? update.where('last_step', 'is', null) : update.where('last_step', '=', lastStep);
    return Number((await update.executeTakeFirst()).numUpdatedRows) === 1;
  }

  const passkeyCount = async (operatorId: string) =>
    Number(
      (
        await db
          .selectFrom('operator_passkeys')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('operator_id', '=', operatorId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  const app = (operatorId: string) => db.selectFrom('operator_totp').selectAll().where('operator_id', '=', operatorId).executeTakeFirst();

  const factors: SecondFactors = {
    async status(operatorId) {
      const [row, left, passkeys, required] = await Promise.all([
        app(operatorId),
        recoveryCodesLeft(operatorId),
        passkeyCount(operatorId),
        factors.required(),
      ]);
      return { totp: !!row?.confirmed_at, recoveryCodesLeft: left, passkeys, required };
    },

    async enrolled(operatorId) {
      return !!(await app(operatorId))?.confirmed_at || (await passkeyCount(operatorId)) > 0;
    },

    async enrolledOperators() {
      const [apps, keys] = await Promise.all([
        db.selectFrom('operator_totp').select('operator_id').where('confirmed_at', 'is not', null).execute(),
        db.selectFrom('operator_passkeys').select('operator_id').distinct().execute(),
      ]);
      return new Set([...apps, ...keys].map((r) => r.operator_id));
    },

    async begin(operator) {
      const row = await app(operator.id);
      if (row?.confirmed_at) throw new AppError('conflict', 'an authenticator app is already set up: remove it first to set up another');
      const secret = randomBytes(20); // 160 bits, RFC 4226's recommended length for HMAC-SHA1
      await db.deleteFrom('operator_totp').where('operator_id', '=', operator.id).execute();
      await db
        .insertInto('operator_totp')
        .values({
          operator_id: operator.id,
          secret: box.seal(secret.toString('base64')),
          created_at: clock.now().toISOString(),
          confirmed_at: null,
          last_step: null,
        })
        .execute();
      const uri = keyUri(secret, operator.email, ISSUER);
      const qrSvg = await qrcode().toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
      return { secret: base32(secret), uri, qrSvg };
    },

    async confirm(operatorId, code) {
      const row = await app(operatorId);
      if (!row) throw new AppError('conflict', 'no authenticator app is being set up: start again');
      if (row.confirmed_at) throw new AppError('conflict', 'the authenticator app is already set up');
      const secret = Buffer.from(box.open(row.secret), 'base64');
      if (!(await takeCode(operatorId, secret, String(code), row.last_step))) {
        throw new AppError('invalid_body', 'that code does not match: check the phone’s clock and type the code the app shows now', {
          issues: [{ path: 'code', message: 'wrong or expired code' }],
        });
      }
      await db
        .updateTable('operator_totp')
        .set({ confirmed_at: clock.now().toISOString() })
        .where('operator_id', '=', operatorId)
        .execute();
      return { recoveryCodes: await writeRecoveryCodes(operatorId) };
    },

    async check(operatorId, proof) {
      const row = await app(operatorId);
      if (!row?.confirmed_at) {
        // Under the box's rule an operator whose second factor is a passkey signs in with it: the
        // password alone would be one factor.
        if ((await passkeyCount(operatorId)) > 0 && (await factors.required())) {
          throw new AppError('unauthorized', 'this box requires a second factor, and yours is a passkey: sign in with the passkey', {
            secondFactor: 'passkey',
          });
        }
        return 'password';
      }
      if (typeof proof.code === 'string' && proof.code.trim()) {
        const secret = Buffer.from(box.open(row.secret), 'base64');
        if (await takeCode(operatorId, secret, proof.code, row.last_step)) return 'password+totp';
        throw new AppError('unauthorized', 'wrong authentication code, or one already used', { secondFactor: 'totp' });
      }
      if (typeof proof.recoveryCode === 'string' && proof.recoveryCode.trim()) {
        const spent = await db
          .updateTable('operator_recovery_codes')
          .set({ used_at: clock.now().toISOString() })
          .where('operator_id', '=', operatorId)
          .where('code_hash', '=', sha256(normalCode(proof.recoveryCode)))
          .where('used_at', 'is', null)
          .executeTakeFirst();
        if (Number(spent.numUpdatedRows) === 1) return 'password+recovery-code';
        throw new AppError('unauthorized', 'wrong recovery code, or one already used', { secondFactor: 'totp' });
      }
      throw secondFactorMissing();
    },

    async renewRecoveryCodes(operatorId) {
      if (!(await app(operatorId))?.confirmed_at)
        throw new AppError('conflict', 'recovery codes come with an authenticator app: set one up first');
      return writeRecoveryCodes(operatorId);
    },

    async remove(operatorId) {
      await db.transaction().execute(async (trx) => {
        await trx.deleteFrom('operator_recovery_codes').where('operator_id', '=', operatorId).execute();
        await trx.deleteFrom('operator_totp').where('operator_id', '=', operatorId).execute();
      });
    },

    async reset(operatorId) {
      await factors.remove(operatorId);
      await db.deleteFrom('operator_passkeys').where('operator_id', '=', operatorId).execute();
    },

    async required() {
      const row = await db.selectFrom('box_settings').select('value').where('name', '=', REQUIRE).executeTakeFirst();
      return row?.value === 'true';
    },

    async setRequired(on) {
      const value = { value: String(on), updated_at: clock.now().toISOString() };
      await db
        .insertInto('box_settings')
        .values({ name: REQUIRE, ...value })
        .onConflict((oc) => oc.column('name').doUpdateSet(value))
        .execute();
    },
  };
  return factors;
}
