// The channels: their specs and registry, rendering through them, provider connections and the test
// channel. This is the area's public face: the rest of the daemon imports only what it names (the
// `areas-through-their-face` rule).
export { type ConnectionStore, connectionView, resealConnectionSecrets } from './connections.js';
export type { ProviderStatusSink } from './provider-status.js';
export { type CallbackRequest, kebab } from './provider.js';
export { createTestChannel, PROVIDERS, simulationFor, specOf } from './registry.js';
export { renderOutput, type RenderRequest } from './render.js';
