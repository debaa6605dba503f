// A list whose rows can be removed one by one after a confirmation (API tokens, OAuth clients):
// ListView with a danger button per row for a role that may remove, the <Confirm> dialog, and the
// refusal shown above the list. The list reloads after a removal and whenever reloadKey changes.
// Rows `removable` refuses get no button (a used bootstrap cannot be revoked). A removal sent with
// the row's etag (if-match) and refused with 409 reloads the list and, given `current` (the item
// read again), offers to apply it again on the current version (components/Conflict).
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Page } from '../lib/api.ts';
import { ListView, type Column } from './ListView.tsx';
import { ErrorNotice } from './ErrorNotice.tsx';
import { Confirm } from './Confirm.tsx';
import { Conflict, isConflict } from './Conflict.tsx';
import { useAction } from './Form.tsx';

export function RemovableList<T>(props: {
  label: string;
  load: (cursor: string | undefined, limit: number) => Promise<Page<T>>;
  columns: Column<T>[];
  rowKey: (item: T) => string;
  nameOf: (item: T) => string;
  empty: ComponentChildren;
  reloadKey?: unknown;
  /** Whether the caller's role may remove (else no button; the API decides anyway). */
  mayRemove: boolean;
  /** The button's word, e.g. "Revoke"; the dialog's button adds `noun` ("Revoke token"). */
  verb: string;
  noun: string;
  consequence: ComponentChildren;
  remove: (item: T) => Promise<void>;
  removable?: (item: T) => boolean;
  current?: (item: T) => Promise<T>;
}) {
  const [removing, setRemoving] = useState<T | undefined>(undefined);
  const [removed, setRemoved] = useState(0);
  // The item of the last removal tried, to apply it again after a conflict.
  const [tried, setTried] = useState<T | undefined>(undefined);
  const action = useAction();

  async function removeNow(item: T, reread: boolean) {
    setTried(item);
    const done = await action.run(async () => {
      await props.remove(reread && props.current ? await props.current(item) : item);
      return true;
    });
    if (done) setRemoved((n) => n + 1);
  }
  function confirm() {
    const item = removing;
    setRemoving(undefined);
    if (item !== undefined) void removeNow(item, false);
  }

  const columns: Column<T>[] = props.mayRemove
    ? [
        ...props.columns,
        {
          label: 'Actions',
          cell: (item) =>
            props.removable?.(item) === false ? (
              <span class="muted">—</span>
            ) : (
              <button type="button" class="danger" disabled={action.busy} onClick={() => setRemoving(item)}>
                {props.verb}
                <span class="visually-hidden"> {props.nameOf(item)}</span>
              </button>
            ),
        },
      ]
    : props.columns;

  return (
    <>
      {props.current && <Conflict error={action.error} what={`The ${props.noun}`} onReload={() => setRemoved((n) => n + 1)} onReapply={() => tried !== undefined && void removeNow(tried, true)} busy={action.busy} />}
      {!(props.current && isConflict(action.error)) && <ErrorNotice error={action.error} title={`The ${props.noun} was not ${props.verb.toLowerCase()}d.`} />}
      <ListView<T> label={props.label} load={props.load} columns={columns} rowKey={props.rowKey} deps={[props.reloadKey, removed]} empty={props.empty} />
      <Confirm
        open={removing !== undefined}
        title={`${props.verb} the ${props.noun} ${removing === undefined ? '' : props.nameOf(removing)}?`}
        confirmLabel={`${props.verb} ${props.noun}`}
        danger
        onConfirm={confirm}
        onCancel={() => setRemoving(undefined)}
      >
        {props.consequence}
      </Confirm>
    </>
  );
}
