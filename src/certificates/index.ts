// TLS certificates: the store, ACME, and the certificate served for each name. This is the area's
// public face: the rest of the daemon imports only what it names (the `areas-through-their-face`
// rule).
export { alpnCertificate, alpnToken } from './acme.js';
export type { CertificateProblem, Certificates } from './certificates.js';
export { MAX_HELLO_BYTES, readClientHello } from './client-hello.js';
export type { KeyPair, ServedCertificates } from './serving.js';
