// The Overview page's figures. (Filled in with the overview page.)
import { Router } from 'express';
import type { DashboardDeps } from './context.js';

export function overviewRoutes(_deps: DashboardDeps): Router {
  return Router();
}
