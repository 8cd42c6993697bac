// The background work the daemon runs, declared in two lists the composition root reads (app.ts
// starts them; it does not name them): the workers, which poll for due work and are woken when
// some is committed (lib/worker.ts), and the daily jobs, which run at `inbound.purgeCron`, each
// by one node of a cluster (cluster/jobs.ts). A job's name is what the logs, the metrics and the
// cluster's once-per-day record call it. test/jobs.test.ts checks that what the app starts is
// what these lists declare.
import type { Deps } from './deps.js';
import type { DomainStore } from './domains/domains.js';
import type { Forwarding } from './forwarding/forwarding.js';
import type { PassedClients } from './inbound/passed-clients.js';
import type { ReceivedReader } from './inbound/received.js';
import { forgetSeen } from './inbound/store.js';
import type { Worker, WorkerSpec } from './lib/worker.js';
import { CHECKS_WORKER, type MessageCheckService } from './outbound/checks/checks.js';
import { DISPATCHER_WORKER, type Outbound } from './outbound/outbound.js';
import type { Webhooks } from './webhooks/webhooks.js';

/** What the workers and daily jobs are made of: the domain services the composition root made. */
export interface JobServices extends Pick<Deps, 'config' | 'db' | 'clock'> {
  outbound: Outbound;
  webhooks: Webhooks;
  forwarding: Forwarding;
  messageChecks: MessageCheckService;
  received: ReceivedReader;
  domains: DomainStore;
  /** The clients greeted without the pause; null when `smtp.greetingPassTtl` is 0. */
  passedClients: PassedClients | null;
}

export interface WorkerEntry {
  /** The worker's name, as its spec gives it (logs, metrics). */
  name: string;
  spec(s: JobServices): WorkerSpec;
  /** Hands the module its worker, so it can wake it after committing work. */
  attach?(s: JobServices, worker: Worker): void;
}

export const WORKERS: readonly WorkerEntry[] = [
  { name: DISPATCHER_WORKER, spec: (s) => s.outbound.workerSpec, attach: (s, w) => s.outbound.attachWorker(w) },
  { name: 'webhooks', spec: (s) => s.webhooks.deliverer.spec, attach: (s, w) => s.webhooks.attach(w) },
  { name: 'forwarder', spec: (s) => s.forwarding.workerSpec, attach: (s, w) => s.forwarding.attach(w) },
  { name: CHECKS_WORKER, spec: (s) => s.messageChecks.workerSpec },
];

export interface DailyJob {
  name: string;
  run(s: JobServices): Promise<unknown>;
}

export const DAILY_JOBS: readonly DailyJob[] = [
  { name: 'purge-received', run: (s) => s.received.purge() },
  {
    name: 'forget-seen-inbound',
    run: (s) => forgetSeen(s.db, new Date(s.clock.now().getTime() - s.config.inbound.retryWindow).toISOString()),
  },
  { name: 'expire-domain-claims', run: (s) => s.domains.expireClaims() },
  { name: 'recheck-domains', run: (s) => s.domains.recheckConfirmed() },
  { name: 'rotate-dkim-keys', run: (s) => s.domains.rotateDkimKeys() },
  { name: 'purge-passed-smtp-clients', run: (s) => s.passedClients?.purge() ?? Promise.resolve(0) },
];
