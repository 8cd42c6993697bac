// The daemon's own self-signed certificate maker, for 127.0.0.1 and localhost, so the HTTP/2 APNs
// fake can speak TLS without openssl or a certificate library.
import { makeSelfSigned } from '../../../src/smtp/self-signed.js';

export function selfSignedCert(): { key: string; cert: string } {
  return makeSelfSigned('localhost', new Date(), ['127.0.0.1']);
}
