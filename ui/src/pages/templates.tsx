// Placeholder until the page is built.
import { Page } from '../components';
import type { Route } from '../routes';

export const routes: Route[] = [{ pattern: '/templates', render: () => <Page title="Templates">Not built yet.</Page> }];
