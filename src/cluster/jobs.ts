// Scheduled jobs run once per cluster. Every node's schedule fires at the same minute; before
// running, a node inserts (job, period) into `job_runs`, and only the node whose insert wins runs
// the job; the others skip it. The period is the scheduled minute (UTC), so a node whose clock is a
// little off still names the same run. Rows older than 30 days are dropped by the winner.
import { isUniqueViolation } from '../db/index.js';
import type { Deps } from '../deps.js';

export interface ClusterJobs {
  /** Runs `job` unless another node already claimed it for `period`; true when this node ran it. */
  once(name: string, period: Date, job: () => Promise<unknown>): Promise<boolean>;
}

export function createClusterJobs(deps: Pick<Deps, 'db' | 'clock' | 'log'> & { nodeId: string }): ClusterJobs {
  const { db, log } = deps;
  return {
    async once(name, at, job) {
      const period = new Date(Math.floor(at.getTime() / 60_000) * 60_000).toISOString();
      try {
        await db
          .insertInto('job_runs')
          .values({ job: name, period, node: deps.nodeId, started_at: deps.clock.now().toISOString() })
          .execute();
      } catch (err) {
        if (isUniqueViolation(err)) {
          log.debug({ job: name, period }, 'scheduled job already claimed by another node');
          return false;
        }
        throw err;
      }
      const cutoff = new Date(at.getTime() - 30 * 86_400_000).toISOString();
      await db.deleteFrom('job_runs').where('period', '<', cutoff).execute();
      await job();
      return true;
    },
  };
}
