// Loading the record a page is about. A link (an html_url) may name a record of another of the
// person's workspaces than the current one: when the record is not found in the current one,
// the record's workspace is asked of GET /v1/lookup/{id} and, if the person belongs to it, the
// app switches there and loads the record again.
import { useEffect, useState } from 'preact/hooks';
import { useSession } from './session.tsx';
import { useApi, type Loaded } from './useApi.ts';
import { findWorkspaceOf } from './lookup.ts';

export function useRecord<T>(id: string, load: () => Promise<T>): Loaded<T> {
  const { workspace, switchTo } = useSession();
  const loaded = useApi(load, [id, workspace?.id]);
  const [looked, setLooked] = useState<string | null>(null);
  useEffect(() => {
    if (loaded.error?.code !== 'NOT_FOUND' || looked === id) return;
    setLooked(id);
    void findWorkspaceOf(id).then((ws) => {
      if (ws && ws !== workspace?.id) switchTo(ws);
    });
  }, [loaded.error, id]);
  return loaded;
}
