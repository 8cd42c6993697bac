// DKIM signing (RFC 6376, rsa-sha256, relaxed/relaxed) with the per-domain keys Postern generates
// and keeps in the `domains` table (domains/sending.ts finds the key; this module only signs).
import type DKIMClass from 'nodemailer/lib/dkim/index.js';
import { lazyRequire } from '../../lib/lazy.js';
import type { SigningKey } from '../../domains/sending.js';

// Loaded where mail is signed: on a delivery thread, not the event loop (lib/lazy.ts).
const dkim = lazyRequire<typeof DKIMClass>('nodemailer/lib/dkim/index.js');

// RFC 8058 requires List-Unsubscribe and List-Unsubscribe-Post to be covered by the signature.
const SIGNED_HEADERS =
  'From:Sender:Reply-To:Subject:Date:Message-ID:To:Cc:MIME-Version:Content-Type:Content-Transfer-Encoding:' +
  'In-Reply-To:References:List-Id:List-Unsubscribe:List-Unsubscribe-Post';

/** Prepends a DKIM-Signature header to a complete RFC 5322 message. */
export async function signMessage(raw: Buffer, key: SigningKey): Promise<Buffer> {
  const signer = new (dkim())({
    domainName: key.domain,
    keySelector: key.selector,
    privateKey: key.privateKey,
    headerFieldNames: SIGNED_HEADERS,
  });
  const chunks: Buffer[] = [];
  for await (const chunk of signer.sign(raw)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
