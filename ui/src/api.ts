// Every call the dashboard makes: same-origin fetch with the session cookie, the CSRF token on
// state-changing calls, JSON both ways, and the interface's error envelope turned into ApiError.
// What a call answers is typed from the contract (src/contract/): get/post/put/patch/del find the
// operation whose path matches the one called (`/v1/messages/${id}` is `GET /v1/messages/:id`) and
// answer its entry of RESPONSES (the schema the API description states) or of DashboardAnswers.
import type { DashboardAnswers } from '../../src/contract/dashboard';
import type { OperationKey, ResponseOf } from '../../src/contract/responses';
let csrfToken = '';

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

export interface Issue {
  path: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly issues: Issue[] = [],
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
  /** The message with every issue, for a form's error line. */
  describe(): string {
    return this.issues.length ? this.issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ') : this.message;
  }
}

/** Every answer the dashboard may read, by operation key (`METHOD /path/:param`). */
type Answers = { [K in OperationKey]: ResponseOf<K> } & DashboardAnswers;
type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

// Matching a called path against the operation keys, one segment at a time: `:param` matches any
// one segment, a query string is left out. A path no operation matches answers `unknown`.
type Split<S extends string> = S extends `${infer Head}/${infer Tail}` ? [Head, ...Split<Tail>] : [S];
type SegmentOf<K extends string> = K extends `:${string}` ? string : K;
type Matches<P extends string[], K extends string[]> = P extends [infer PH, ...infer PT extends string[]]
  ? K extends [infer KH extends string, ...infer KT extends string[]]
    ? PH extends SegmentOf<KH>
      ? Matches<PT, KT>
      : false
    : false
  : K extends []
    ? true
    : false;
type WithoutQuery<P extends string> = P extends `${infer Path}?${string}` ? Path : P;
type KeyOf<M extends Method, P extends string> = {
  [K in keyof Answers]: K extends `${M} ${infer Pattern}`
    ? Matches<Split<WithoutQuery<P>>, Split<Pattern>> extends true
      ? K
      : never
    : never;
}[keyof Answers];
/** What `METHOD path` answers: the matching operation's entry, or `unknown` when none matches. */
export type AnswerOf<M extends Method, P extends string> = [KeyOf<M, P>] extends [never] ? unknown : Answers[KeyOf<M, P>];

/** Fired when a call finds the session gone, so the shell can show the login page. */
export const SESSION_ENDED = 'postern:session-ended';

async function api<T>(method: string, path: string, body?: unknown, init: RequestInit = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD') headers['x-csrf-token'] = csrfToken;
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
    ...init,
  });
  return answerOf<T>(path, res.status, res.statusText, await res.text());
}

/**
 * An answer's JSON, or the ApiError of its envelope; a 401 (but for the login and setup pages'
 * own calls) also tells the shell that the session is gone. One reading for `api` and `upload`.
 */
function answerOf<T>(path: string, status: number, statusText: string, text: string): T {
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (status >= 200 && status < 300) return json as T;
  const e = envelopeOf(json);
  if (status === 401 && !path.endsWith('/login') && !path.endsWith('/setup')) window.dispatchEvent(new Event(SESSION_ENDED));
  throw new ApiError(status, e.code ?? 'http_error', e.message ?? `${status} ${statusText}`, e.issues ?? [], e);
}

/**
 * Sends a file as the body of a POST, telling `onProgress` the bytes sent so far (fetch cannot
 * report an upload's progress; XMLHttpRequest can). Answers and errors as `api` does.
 */
export function upload<P extends string>(
  path: P,
  file: Blob,
  contentType: string,
  onProgress: (sent: number, total: number) => void,
): Promise<AnswerOf<'POST', P>> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    xhr.setRequestHeader('accept', 'application/json');
    xhr.setRequestHeader('content-type', contentType);
    xhr.setRequestHeader('x-csrf-token', csrfToken);
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.upload.onload = () => onProgress(file.size, file.size);
    xhr.onerror = () => reject(new ApiError(0, 'network_error', 'the upload did not reach the server'));
    xhr.onload = () => {
      try {
        resolve(answerOf<AnswerOf<'POST', P>>(path, xhr.status, xhr.statusText, xhr.responseText));
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    };
    xhr.send(file);
  });
}

export const get = <P extends string>(path: P) => api<AnswerOf<'GET', P>>('GET', path);
export const post = <P extends string>(path: P, body?: unknown) => api<AnswerOf<'POST', P>>('POST', path, body ?? {});
export const put = <P extends string>(path: P, body?: unknown) => api<AnswerOf<'PUT', P>>('PUT', path, body ?? {});
export const patch = <P extends string>(path: P, body?: unknown) => api<AnswerOf<'PATCH', P>>('PATCH', path, body ?? {});
export const del = <P extends string>(path: P) => api<AnswerOf<'DELETE', P>>('DELETE', path);

/** The error envelope's fields, from whatever JSON an error answer carried. */
interface Envelope {
  code?: string;
  message?: string;
  issues?: Issue[];
  [field: string]: unknown;
}
function envelopeOf(json: unknown): Envelope {
  const error = json && typeof json === 'object' ? (json as { error?: unknown }).error : undefined;
  return error && typeof error === 'object' ? (error as Envelope) : {};
}

/** A query string from the set values of an object (`undefined` and '' left out). */
export function query(params: Record<string, string | number | boolean | undefined | null>): '' | `?${string}` {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
