// A write refused with 409 ABORTED because the record changed since the page loaded it (if-match):
// the page reloads the current state at once and offers to apply the person's change again on it.
// The offer waits for that reload: applied again on the state the page had, the change would be
// refused again (the etag is still the old one), and a quick click did exactly that.
import { useLayoutEffect, useState } from 'preact/hooks';
import type { ApiError } from '../lib/api.ts';

export function isConflict(error: ApiError | undefined): boolean {
  return error?.reason === 'ETAG_MISMATCH';
}

/**
 * `onReload` reads the record again; when it returns a promise (a page's reload), "Apply my change
 * again" is disabled until it settles, so the change is applied on the state just read.
 */
export function Conflict(props: { error: ApiError | undefined; what: string; onReload: () => unknown; onReapply: () => void; busy?: boolean }) {
  const conflict = isConflict(props.error);
  const [reloading, setReloading] = useState(false);
  // before the paint, so the offer never shows enabled while the reload is under way
  useLayoutEffect(() => {
    if (!conflict) return;
    const reloaded = props.onReload();
    if (reloaded instanceof Promise) {
      setReloading(true);
      void reloaded.finally(() => setReloading(false));
    }
    // reload once per refused write
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [props.error]);
  if (!conflict) return null;
  return (
    <div class="notice notice-warn" role="alert">
      <p>
        <strong>{props.what} changed since this page loaded it.</strong> The page now shows its current state; your change was not applied.
      </p>
      <button type="button" class="primary" disabled={props.busy || reloading} aria-busy={reloading || undefined} onClick={props.onReapply}>
        Apply my change again
      </button>
    </div>
  );
}
