// Who is signed in, their workspaces and the one the app acts in. Read from the API when the app
// opens and after each change; the current workspace is remembered per browser (localStorage), and
// a link to a record of another workspace switches to it (pages call switchTo).
import { createContext, type ComponentChildren } from 'preact';
import { useCallback, useContext, useEffect, useMemo, useState } from 'preact/hooks';
import { client, ok, setApiWorkspace, setUnauthenticatedHandler, type Schemas } from './api.ts';

export type Me = Schemas['Me'];
export type Workspace = Schemas['Workspace'];

export interface Session {
  me: Me;
  workspaces: Workspace[];
  /** The current workspace, or null when the user belongs to none yet. */
  workspace: Workspace | null;
  switchTo: (workspaceId: string) => void;
  refreshWorkspaces: () => Promise<Workspace[]>;
  /** Reads GET /v1/me again (after a change to the account, such as two-factor sign-in turned on). */
  refreshMe: () => Promise<void>;
  signOut: () => Promise<void>;
}

const STORAGE_KEY = 'svc.workspace';
const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in app');
  return s;
}

/** The current workspace, for pages that only make sense inside one (the layout guarantees it). */
export function useWorkspace(): Workspace {
  const ws = useSession().workspace;
  if (!ws) throw new Error('no current workspace');
  return ws;
}

export async function loadWorkspaces(): Promise<Workspace[]> {
  const page = await ok(client.GET('/v1/workspaces', { params: { query: { limit: 100 } } }));
  return page.data;
}

function remembered(): string | null {
  try {
    return localStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

function pick(workspaces: Workspace[], wanted: string | null): Workspace | null {
  return workspaces.find((w) => w.id === wanted) ?? workspaces[0] ?? null;
}

export function SessionProvider(props: { me: Me; workspaces: Workspace[]; onSignedOut: () => void; children: ComponentChildren }) {
  const [me, setMe] = useState(props.me);
  const [workspaces, setWorkspaces] = useState(props.workspaces);
  const [currentId, setCurrentId] = useState<string | null>(() => pick(props.workspaces, remembered())?.id ?? null);
  const workspace = pick(workspaces, currentId);
  setApiWorkspace(workspace?.id ?? null);

  useEffect(() => setUnauthenticatedHandler(props.onSignedOut), [props.onSignedOut]);

  const switchTo = useCallback((id: string) => {
    try {
      localStorage.setItem(STORAGE_KEY, id);
    } catch {
      // private mode: the choice lasts until the tab closes
    }
    setApiWorkspace(id);
    setCurrentId(id);
  }, []);

  const refreshWorkspaces = useCallback(async () => {
    const list = await loadWorkspaces();
    setWorkspaces(list);
    return list;
  }, []);

  const refreshMe = useCallback(async () => {
    setMe(await ok(client.GET('/v1/me', {})));
  }, []);

  const signOut = useCallback(async () => {
    await ok(client.DELETE('/v1/auth/sessions/current', {}));
    props.onSignedOut();
  }, [props.onSignedOut]);

  const value = useMemo<Session>(
    () => ({ me, workspaces, workspace, switchTo, refreshWorkspaces, refreshMe, signOut }),
    [me, workspaces, workspace, switchTo, refreshWorkspaces, refreshMe, signOut],
  );
  return <SessionContext.Provider value={value}>{props.children}</SessionContext.Provider>;
}
