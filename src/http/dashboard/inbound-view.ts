// Received mail's HTML, served alone for the sandboxed iframe. (Filled in with the inbound pages.)
import { Router } from 'express';
import type { DashboardDeps } from './context.js';

export function inboundViewRoutes(_deps: DashboardDeps): Router {
  return Router();
}
