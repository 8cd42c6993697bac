// Placeholder until the page is built.
import { Page } from '../components';
import type { Route } from '../routes';

export const routes: Route[] = [{ pattern: '/suppressions', render: () => <Page title="Suppressions">Not built yet.</Page> }];
