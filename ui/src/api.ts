// Every call the dashboard makes: same-origin fetch with the session cookie, the CSRF token on
// state-changing calls, JSON both ways, and the interface's error envelope turned into ApiError.
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

/** Fired when a call finds the session gone, so the shell can show the login page. */
export const SESSION_ENDED = 'postern:session-ended';

export async function api<T = any>(method: string, path: string, body?: unknown, init: RequestInit = {}): Promise<T> {
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
  const text = await res.text();
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!res.ok) {
    const e = json?.error ?? {};
    const err = new ApiError(res.status, e.code ?? 'http_error', e.message ?? `${res.status} ${res.statusText}`, e.issues ?? [], e);
    if (res.status === 401 && !path.endsWith('/login') && !path.endsWith('/setup')) window.dispatchEvent(new Event(SESSION_ENDED));
    throw err;
  }
  return json as T;
}

/**
 * Sends a file as the body of a POST, telling `onProgress` the bytes sent so far (fetch cannot
 * report an upload's progress; XMLHttpRequest can). Answers and errors as `api` does.
 */
export function upload<T = any>(
  path: string,
  file: Blob,
  contentType: string,
  onProgress: (sent: number, total: number) => void,
): Promise<T> {
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
      let json: any = null;
      try {
        json = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        json = null;
      }
      if (xhr.status >= 200 && xhr.status < 300) return resolve(json as T);
      const e = json?.error ?? {};
      if (xhr.status === 401) window.dispatchEvent(new Event(SESSION_ENDED));
      reject(new ApiError(xhr.status, e.code ?? 'http_error', e.message ?? `${xhr.status} ${xhr.statusText}`, e.issues ?? [], e));
    };
    xhr.send(file);
  });
}

export const get = <T = any>(path: string) => api<T>('GET', path);
export const post = <T = any>(path: string, body?: unknown) => api<T>('POST', path, body ?? {});
export const put = <T = any>(path: string, body?: unknown) => api<T>('PUT', path, body ?? {});
export const patch = <T = any>(path: string, body?: unknown) => api<T>('PATCH', path, body ?? {});
export const del = <T = any>(path: string) => api<T>('DELETE', path);

/** A query string from the set values of an object (`undefined` and '' left out). */
export function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
