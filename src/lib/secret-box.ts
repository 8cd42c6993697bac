// Provider credentials and DKIM private keys are encrypted at rest with AES-256-GCM under `secrets.key`. When the setting
// is empty, a random key is generated into {dataDir}/secrets.key (mode 0600) on first start and
// reused after; losing that file makes stored credentials unreadable, so back it up with the data.
// Ciphertext format: "v1:" + base64(iv[12] | tag[16] | ciphertext).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** What every sealed value starts with (and a PEM key never does). */
export const SEALED_PREFIX = 'v1:';

export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
}

function parseKey(text: string): Buffer {
  const t = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  if (key.length !== 32) throw new Error('secrets key must be 32 bytes (base64 or hex)');
  return key;
}

/** The configured key, or the one in the data dir, generating it on first use. */
export function loadSecretsKey(config: { dataDir: string; secrets: { key: string } }): Buffer {
  if (config.secrets.key) return parseKey(config.secrets.key);
  const file = path.resolve(config.dataDir, 'secrets.key');
  try {
    return parseKey(readFileSync(file, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(path.dirname(file), { recursive: true });
  try {
    // 'wx': if a CLI and the daemon start at once, exactly one writes and both read the same key.
    writeFileSync(file, randomBytes(32).toString('base64') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return parseKey(readFileSync(file, 'utf8'));
}

export function createSecretBox(key: Buffer): SecretBox {
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return 'v1:' + Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64');
    },
    open(sealed) {
      if (!sealed.startsWith('v1:')) throw new Error('unknown secret format');
      const raw = Buffer.from(sealed.slice(3), 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
  };
}
