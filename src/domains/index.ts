// The public face of domains/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export { resealDkimKeys } from './dkim-keys.js';
export type { Check, Doctor, DoctorReport } from './doctor.js';
export type { DomainStore } from './domains.js';
export { MTA_STS_MODES, type MtaStsPolicies } from './mta-sts-policy.js';
export { bounceDomainOf, isDomainName, normalizeDomain, slugOfSharedDomain } from './names.js';
export { domainReadCache } from './read-cache.js';
export { domainOf, findSigningKey, isVerifiedDomain, type SigningKey } from './sending.js';
