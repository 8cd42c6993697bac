// A delivery thread (see delivery-threads.ts): renders messages, composes and signs email, and
// hosts the SMTP pools the email channel opens here (pool-wire.ts).
import { serveThread, threadLog } from '../../lib/threads.js';
import { createPoolHost, errorToWire } from './pool-wire.js';
import { runJob, type DeliveryJob } from './delivery-threads.js';

const host = createPoolHost(threadLog);

serveThread<DeliveryJob>((job) => (job.kind === 'pool' ? host.call(job.call) : runJob(job)), { encodeError: errorToWire });
