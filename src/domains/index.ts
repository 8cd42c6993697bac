// The domains a workspace sends from and receives for: claims, DNS checks, the doctor, DKIM keys and
// their rotation, MTA-STS policies. This is the area's public face: the rest of the daemon imports
// only what it names (the `areas-through-their-face` rule).
export { resealDkimKeys } from './dkim-keys.js';
export type { Check, Doctor, DoctorReport } from './doctor.js';
export type { DomainStore } from './domains.js';
export { MTA_STS_MODES, type MtaStsPolicies } from './mta-sts-policy.js';
export { bounceDomainOf, isDomainName, normalizeDomain, slugOfSharedDomain } from './names.js';
export { domainReadCache } from './read-cache.js';
export { domainOf, findSigningKey, isVerifiedDomain, type SigningKey } from './sending.js';
