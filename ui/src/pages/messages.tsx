// Placeholder until the page is built.
import { Page } from '../components';
import type { Route } from '../routes';

export const routes: Route[] = [{ pattern: '/messages', render: () => <Page title="Messages">Not built yet.</Page> }];
