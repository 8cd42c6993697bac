// Placeholder until the page is built.
import { Page } from '../components';
import type { Route } from '../routes';

export const routes: Route[] = [{ pattern: '/connections', render: () => <Page title="Connections">Not built yet.</Page> }];
