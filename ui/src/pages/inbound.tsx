// Placeholder until the page is built.
import { Page } from '../components';
import type { Route } from '../routes';

export const routes: Route[] = [{ pattern: '/inbound', render: () => <Page title="Inbound">Not built yet.</Page> }];
