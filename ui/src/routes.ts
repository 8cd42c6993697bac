// What a page module gives the shell: its paths (below /dashboard) and what each renders.
import type { JSX } from 'preact';

export interface Route {
  /** `/messages/:id`: named parts are passed to render. */
  pattern: string;
  render(params: Record<string, string>): JSX.Element;
  /** Only owners see it (workspaces, operators, audit). */
  ownerOnly?: boolean;
}
