// Placeholder until the page is built.
import { Page } from '../components';
import type { Route } from '../routes';

export const routes: Route[] = [{ pattern: '/', render: () => <Page title="Overview">Not built yet.</Page> }];
