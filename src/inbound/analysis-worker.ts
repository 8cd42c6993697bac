// An analysis thread: verifies and parses received messages (analyze.ts) off the daemon's event
// loop, with its own resolver on the configured DNS servers and its own lookup cache.
import { parentPort, workerData } from 'node:worker_threads';
import { createResolver } from '../lib/dns.js';
import { analyze, type AnalyzeInput, type Analysis } from './analyze.js';
import { cachedLookup } from './verify.js';

export interface AnalysisThreadData {
  dnsServers: string[];
  dnsTimeoutMs: number;
}

export type AnalysisReply = { id: number; ok: true; value: Analysis } | { id: number; ok: false; error: string };

const { dnsServers, dnsTimeoutMs } = workerData as AnalysisThreadData;
const lookup = cachedLookup(createResolver(dnsServers, dnsTimeoutMs));

parentPort!.on('message', ({ id, input }: { id: number; input: AnalyzeInput }) => {
  analyze(lookup, input).then(
    (value) => parentPort!.postMessage({ id, ok: true, value } satisfies AnalysisReply),
    (err: unknown) =>
      parentPort!.postMessage({ id, ok: false, error: err instanceof Error ? err.message : String(err) } satisfies AnalysisReply),
  );
});
