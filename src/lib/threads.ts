// Worker threads, one mechanism for every pool of them (delivery threads, inbound analysis). A pool
// has a fixed number of slots; a slot's thread starts on first use (or warm()), takes calls, and
// answers each with its value or its error. Calls posted in one turn of the event loop go to the
// thread in one message, and answers ready in one turn come back in one, because waking a thread
// costs more than copying what it is sent. Threads keep the process alive only while they have
// calls in flight. When a thread dies its slot is emptied (the next call starts a new one) and its
// unfinished calls go to the pool owner's onExit, which knows whether they can run elsewhere.
//
// Starting a thread from a module that sits next to the caller: built, the module is the `.js`
// beside it; under tsx (tests, benchmarks) the caller is the `.ts` source, and a worker does not
// always inherit the TypeScript loader, so tsx is registered in the worker first.
import { parentPort, Worker, type ResourceLimits } from 'node:worker_threads';

export function startThread(callerUrl: string, name: string, workerData: unknown, resourceLimits?: ResourceLimits): Worker {
  const limits = resourceLimits ? { resourceLimits } : {};
  if (callerUrl.endsWith('.ts')) {
    const url = new URL(`./${name}.ts`, callerUrl).href;
    return new Worker(`import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(url)}); });`, {
      eval: true,
      workerData,
      ...limits,
    });
  }
  return new Worker(new URL(`./${name}.js`, callerUrl), { workerData, ...limits });
}

/**
 * Whether a byte array is the whole of its memory, so it can be handed to another thread (not a
 * slice of a pool). `headroom`: bytes before it in its memory that are its own too.
 */
export function ownsBuffer(bytes: Uint8Array, headroom = 0): boolean {
  return bytes.byteOffset === headroom && headroom + bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
}

/** Bytes that crossed a thread: a posted Buffer arrives as a plain Uint8Array; viewed as a Buffer, not copied. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A log line a thread asks the daemon's logger to write (threads have no logger of their own). */
export type ThreadLogLine = { msg: string; obj: object };

type Request<Req> = { id: number; req: Req };
type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: unknown };
/** What a thread sends: answers, or a log line. */
type ThreadMessage = { replies: Reply[] } | { log: ThreadLogLine };

/** A call that was in flight on a thread that stopped. */
export interface Unfinished<Req, Res> {
  req: Req;
  resolve: (value: Res) => void;
  reject: (err: unknown) => void;
}

export interface ThreadPoolOptions<Req, Res> {
  size: number;
  start(): Worker;
  /** The error a call gets from what the thread sent (default: an Error with the sent message). */
  decodeError?: (wire: unknown) => unknown;
  onLog?: (line: ThreadLogLine) => void;
  /** A thread stopped with calls in flight (default: each call is rejected with the reason). */
  onExit?: (unfinished: Unfinished<Req, Res>[], reason: { err: unknown; code: number }) => void;
  /**
   * Calls made in one turn go to the thread in one message (the default: for many small calls,
   * waking the thread costs more than copying). false posts each call at once, for few large calls
   * whose latency matters more.
   */
  batch?: boolean;
}

export interface ThreadPool<Req, Res> {
  /**
   * Runs a call on the given slot's thread, or on the least busy one. `transfer`: buffers the
   * request hands over rather than copies (the caller must not touch them again).
   */
  call(req: Req, slot?: number, transfer?: ArrayBuffer[]): Promise<Res>;
  /** Starts the threads that are not running. */
  warm(): void;
  /** Whether the slot's thread is running (a call to it would not start one). */
  running(slot: number): boolean;
  /** Threads that stopped other than by close(), so far. */
  readonly lost: number;
  readonly closed: boolean;
  close(): Promise<void>;
}

interface Thread<Req, Res> {
  worker: Worker;
  pending: Map<number, Unfinished<Req, Res>>;
  /** Requests not yet posted: a turn's worth goes in one message, with the buffers they hand over. */
  outbox: Request<Req>[];
  transfer: ArrayBuffer[];
}

const defaultDecode = (wire: unknown): unknown =>
  new Error(typeof wire === 'string' ? wire : ((wire as { message?: string })?.message ?? String(wire)));

export function createThreadPool<Req, Res>(opts: ThreadPoolOptions<Req, Res>): ThreadPool<Req, Res> {
  const threads: (Thread<Req, Res> | null)[] = Array.from({ length: opts.size }, () => null);
  const decode = opts.decodeError ?? defaultDecode;
  let nextId = 1;
  let lost = 0;
  let closed = false;

  const spawn = (slot: number): Thread<Req, Res> => {
    const worker = opts.start();
    worker.unref();
    const t: Thread<Req, Res> = { worker, pending: new Map(), outbox: [], transfer: [] };
    worker.on('message', (msg: ThreadMessage) => {
      if ('log' in msg) return opts.onLog?.(msg.log);
      for (const reply of msg.replies) {
        const p = t.pending.get(reply.id);
        if (!p) continue;
        t.pending.delete(reply.id);
        if (reply.ok) p.resolve(reply.value as Res);
        else p.reject(decode(reply.error));
      }
      if (t.pending.size === 0) worker.unref();
    });
    let failure: unknown = null;
    worker.on('error', (err) => (failure = err));
    worker.on('exit', (code) => {
      if (threads[slot] === t) threads[slot] = null;
      if (!closed) lost++;
      const unfinished = [...t.pending.values()];
      t.pending.clear();
      t.outbox = [];
      t.transfer = [];
      const err = failure ?? new Error(`thread exited with ${code}`);
      if (opts.onExit) opts.onExit(unfinished, { err, code });
      else for (const p of unfinished) p.reject(err);
    });
    threads[slot] = t;
    return t;
  };

  const threadAt = (slot: number): Thread<Req, Res> => threads[slot] ?? spawn(slot);

  // The thread with the fewest calls in flight (every empty slot is started first).
  const leastBusy = (): Thread<Req, Res> => {
    let best = threadAt(0);
    for (let i = 1; i < threads.length; i++) if (threadAt(i).pending.size < best.pending.size) best = threadAt(i);
    return best;
  };

  const post = (t: Thread<Req, Res>) => {
    const requests = t.outbox;
    const transfer = t.transfer;
    t.outbox = [];
    t.transfer = [];
    if (requests.length && threads.includes(t)) t.worker.postMessage(requests, transfer);
  };

  return {
    call(req, slot, transfer = []) {
      if (closed) return Promise.reject(new Error('threads stopped'));
      const t = slot === undefined ? leastBusy() : threadAt(slot % threads.length);
      return new Promise<Res>((resolve, reject) => {
        const id = nextId++;
        if (t.pending.size === 0) t.worker.ref();
        t.pending.set(id, { req, resolve, reject });
        if (opts.batch === false) t.worker.postMessage([{ id, req }], transfer);
        else {
          t.transfer.push(...transfer);
          if (t.outbox.push({ id, req }) === 1) setImmediate(post, t);
        }
      });
    },
    warm() {
      if (closed) return;
      for (let i = 0; i < threads.length; i++) threadAt(i);
    },
    running: (slot) => threads[slot % threads.length] !== null,
    get lost() {
      return lost;
    },
    get closed() {
      return closed;
    },
    async close() {
      closed = true;
      await Promise.all(threads.flatMap((t) => (t ? [t.worker.terminate()] : [])));
    },
  };
}

/**
 * The thread's side: answers each call with `handle`'s value or its error (as `encodeError` makes
 * it). Answers ready in one turn go back in one message; a byte array that owns its memory goes by
 * transfer, not by copy.
 */
export function serveThread<Req>(
  handle: (req: Req) => Promise<unknown>,
  opts: {
    encodeError?: (err: unknown) => unknown;
    /** false: answer each call at once (see ThreadPoolOptions.batch). */ batch?: boolean;
    /** Buffers an answer hands over rather than copies (besides a byte array answered whole). */
    transferOf?: (value: unknown) => ArrayBuffer[];
  } = {},
): void {
  const port = parentPort!;
  const encode = opts.encodeError ?? ((err: unknown) => (err instanceof Error ? err.message : String(err)));
  let replies: Reply[] = [];
  let transfer: ArrayBuffer[] = [];
  const flush = () => {
    port.postMessage({ replies } satisfies ThreadMessage, transfer);
    replies = [];
    transfer = [];
  };
  const answer = (reply: Reply) => {
    const v = reply.ok ? reply.value : null;
    if (v instanceof Uint8Array && ownsBuffer(v)) transfer.push(v.buffer as ArrayBuffer);
    else if (reply.ok && opts.transferOf) transfer.push(...opts.transferOf(v));
    if (replies.push(reply) === 1) {
      if (opts.batch === false) flush();
      else setImmediate(flush);
    }
  };
  port.on('message', (requests: Request<Req>[]) => {
    for (const r of requests) {
      handle(r.req).then(
        (value) => answer({ id: r.id, ok: true, value }),
        (err: unknown) => answer({ id: r.id, ok: false, error: encode(err) }),
      );
    }
  });
}

/** Sends a log line from a thread to the daemon's logger (createThreadPool's onLog). */
export function threadLog(line: ThreadLogLine): void {
  parentPort!.postMessage({ log: line } satisfies ThreadMessage);
}
