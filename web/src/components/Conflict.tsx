// A write refused with 409 ABORTED because the record changed since the page loaded it (if-match):
// the page reloads the current state at once and offers to apply the person's change again on it.
import { useEffect } from 'preact/hooks';
import type { ApiError } from '../lib/api.ts';

export function isConflict(error: ApiError | undefined): boolean {
  return error?.reason === 'ETAG_MISMATCH';
}

export function Conflict(props: { error: ApiError | undefined; what: string; onReload: () => void; onReapply: () => void; busy?: boolean }) {
  const conflict = isConflict(props.error);
  useEffect(() => {
    if (conflict) props.onReload();
    // reload once per refused write
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [props.error]);
  if (!conflict) return null;
  return (
    <div class="notice notice-warn" role="alert">
      <p>
        <strong>{props.what} changed since this page loaded it.</strong> The page now shows its current state; your change was not applied.
      </p>
      <button type="button" class="primary" disabled={props.busy} onClick={props.onReapply}>
        Apply my change again
      </button>
    </div>
  );
}
