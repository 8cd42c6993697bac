// Placeholder until the page is built.
import { Page } from '../components';
import type { Route } from '../routes';

export const routes: Route[] = [{ pattern: '/workspaces', render: () => <Page title="Workspaces & operators">Not built yet.</Page> }];
