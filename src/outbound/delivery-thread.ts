// A delivery thread (see delivery-threads.ts): renders messages, composes and signs email, and
// hosts the SMTP pools the email channel opens here (channels/email/pool-wire.ts).
import { createPoolHost, errorToWire } from '../channels/email/pool-wire.js';
import { serveThread, threadLog } from '../lib/threads.js';
import { runJob, type DeliveryJob } from './delivery-threads.js';

const host = createPoolHost(threadLog);

serveThread<DeliveryJob>((job) => (job.kind === 'pool' ? host.call(job.call) : runJob(job)), { encodeError: errorToWire });
