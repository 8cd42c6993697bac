// The public face of certificates/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export { alpnCertificate, alpnToken } from './acme.js';
export type { CertificateProblem, Certificates } from './certificates.js';
export { MAX_HELLO_BYTES, readClientHello } from './client-hello.js';
export type { KeyPair, ServedCertificates } from './serving.js';
