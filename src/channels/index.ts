// The public face of channels/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export { type ConnectionStore, connectionView, resealConnectionSecrets } from './connections.js';
export type { ProviderStatusSink } from './provider-status.js';
export { type CallbackRequest, kebab } from './provider.js';
export { createTestChannel, PROVIDERS, simulationFor, specOf } from './registry.js';
export { renderContent, renderOutput, type RenderRequest, type RenderResult, TEMPLATE_FIELDS } from './render.js';
