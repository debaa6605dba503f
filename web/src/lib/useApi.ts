// Loading data for a page: the result, the error (an ApiError), and reload(). A newer load wins
// over an older one still in flight, so a page never shows stale data after its inputs changed.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => Promise<void>;
  /** Replaces the data (after a write answered the new state), without a request. */
  set: (data: T) => void;
}

export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError(0, { code: 'INTERNAL', message: err instanceof Error ? err.message : String(err), request_id: '' });
}

export function useApi<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    setLoading(true);
    try {
      const value = await load();
      if (mine !== generation.current) return;
      setData(value);
      setError(undefined);
    } catch (err) {
      if (mine !== generation.current) return;
      setError(toApiError(err));
    } finally {
      if (mine === generation.current) setLoading(false);
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  useEffect(() => {
    void reload();
    return () => {
      generation.current++;
    };
  }, [reload]);
  return { data, error, loading, reload, set: setData };
}
