// Postern's HTTP API from TypeScript: an openapi-fetch client typed by the API description the
// server serves (schema.ts, generated from GET /v1/openapi.json; a test fails while the two
// differ). Every path, parameter, body and answer is typed; a call answers `{ data }` on success
// or `{ error }` with the API's error envelope, and never throws for an HTTP status.
//
//   const postern = createPostern({ baseUrl: 'https://mail.example.com', apiKey: 'sk_live_…' });
//   const { data, error } = await postern.POST('/v1/send', { body: { template: 'welcome', to: 'ann@example.com' } });
import createClient, { mergeHeaders, type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './schema.js';

export type { components, operations, paths };

/** The error envelope every failed call answers (`error.code` says which error; see docs/api/errors). */
export type PosternError = components['schemas']['Error'];

/** A client of one Postern: `GET`, `POST`, `PUT`, `PATCH` and `DELETE` on the API's paths. */
export type Postern = Client<paths>;

export interface PosternOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** Where Postern's HTTP listener is reached: its `publicUrl` (`https://mail.example.com`). */
  baseUrl: string;
  /** An API key, `sk_live_…` or `sk_test_…`, sent as `Authorization: Bearer`. */
  apiKey: string;
}

export function createPostern({ baseUrl, apiKey, headers, ...rest }: PosternOptions): Postern {
  return createClient<paths>({
    ...rest,
    baseUrl: baseUrl.replace(/\/+$/, ''),
    headers: mergeHeaders(headers, { authorization: `Bearer ${apiKey}` }),
  });
}
