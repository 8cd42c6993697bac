// Templates and their numbered versions, the checks of their content, and template push. This is the
// area's public face: the rest of the daemon imports only what it names (the `areas-through-their-
// face` rule).
export { pushTemplates, type TemplateFile } from './push.js';
export { checkTemplates } from './render.js';
export { normalizeSlug, type TemplateStore } from './store.js';
