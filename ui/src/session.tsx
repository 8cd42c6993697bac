// The operator's session as the pages see it: who is logged in, the workspaces it may act on, and
// the workspace and environment (live or test) every page acts on.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Env } from '../../src/contract/vocabulary';
import type { Me } from '../../src/contract/dashboard';

export type { Me };

export interface SessionApi {
  me: Me;
  /** Chooses the workspace and environment; pages reload their data. */
  select(workspaceId: string, env: Env): Promise<void>;
  refresh(): Promise<void>;
  logout(): Promise<void>;
}

export const SessionContext = createContext<SessionApi | null>(null);

export function useSession(): SessionApi {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside the session');
  return s;
}

/** A key that changes when the chosen workspace or environment does: pages reload on it. */
export function useSelectionKey(): string {
  const { me } = useSession();
  return me.selection ? `${me.selection.workspaceId}:${me.selection.env}` : 'none';
}
