// Adding and removing provider connections from the dashboard. (Filled in with the connections page.)
import { Router } from 'express';
import type { DashboardDeps } from './context.js';

export function connectionRoutes(_deps: DashboardDeps): Router {
  return Router();
}
