// The public face of templates/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export { pushTemplates, type TemplateFile } from './push.js';
export { checkTemplates } from './render.js';
export { normalizeSlug, type TemplateStore } from './store.js';
