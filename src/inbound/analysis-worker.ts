// An analysis thread: verifies and parses received messages (analyze.ts) off the daemon's event
// loop, with its own resolver on the configured DNS servers and its own lookup cache.
import { workerData } from 'node:worker_threads';
import { createResolver } from '../lib/dns.js';
import { serveThread } from '../lib/threads.js';
import { analyze, type Analysis, type AnalyzeInput } from './analyze.js';
import { cachedLookup } from './verify.js';

export interface AnalysisThreadData {
  dnsServers: string[];
  dnsTimeoutMs: number;
}

const { dnsServers, dnsTimeoutMs } = workerData as AnalysisThreadData;
const lookup = cachedLookup(createResolver(dnsServers, dnsTimeoutMs));

// The source to store goes back by transfer: it was made in memory of its own (analyze.ts).
serveThread<AnalyzeInput>((input) => analyze(lookup, input), {
  batch: false,
  transferOf: (a) => [(a as Analysis).source.buffer as ArrayBuffer],
});
