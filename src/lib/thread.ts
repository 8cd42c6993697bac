// Starting a worker thread from a module that sits next to the caller. Built, the module is the
// `.js` beside it; under tsx (tests, benchmarks) the caller is the `.ts` source, and a worker does
// not always inherit the TypeScript loader, so tsx is registered in the worker first.
import { Worker } from 'node:worker_threads';

export function startThread(callerUrl: string, name: string, workerData: unknown): Worker {
  if (callerUrl.endsWith('.ts')) {
    const url = new URL(`./${name}.ts`, callerUrl).href;
    return new Worker(`import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(url)}); });`, {
      eval: true,
      workerData,
    });
  }
  return new Worker(new URL(`./${name}.js`, callerUrl), { workerData });
}

/** Bytes that crossed a thread: a posted Buffer arrives as a plain Uint8Array; viewed as a Buffer, not copied. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
