// Placeholder until the page is built.
import { Page } from '../components';
import type { Route } from '../routes';

export const routes: Route[] = [{ pattern: '/keys', render: () => <Page title="API keys">Not built yet.</Page> }];
