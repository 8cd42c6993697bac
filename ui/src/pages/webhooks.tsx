// Placeholder until the page is built.
import { Page } from '../components';
import type { Route } from '../routes';

export const routes: Route[] = [{ pattern: '/webhooks', render: () => <Page title="Webhooks">Not built yet.</Page> }];
