// A list whose rows can be removed one by one after a confirmation (API tokens, OAuth clients):
// ListView with a danger button per row for a role that may remove, the <Confirm> dialog, and the
// refusal shown above the list. The list reloads after a removal and whenever reloadKey changes.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Page } from '../lib/api.ts';
import { ListView, type Column } from './ListView.tsx';
import { ErrorNotice } from './ErrorNotice.tsx';
import { Confirm } from './Confirm.tsx';
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
}) {
  const [removing, setRemoving] = useState<T | undefined>(undefined);
  const [removed, setRemoved] = useState(0);
  const action = useAction();

  async function confirm() {
    const item = removing;
    setRemoving(undefined);
    if (item === undefined) return;
    const done = await action.run(async () => {
      await props.remove(item);
      return true;
    });
    if (done) setRemoved((n) => n + 1);
  }

  const columns: Column<T>[] = props.mayRemove
    ? [
        ...props.columns,
        {
          label: 'Actions',
          cell: (item) => (
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
      <ErrorNotice error={action.error} title={`The ${props.noun} was not ${props.verb.toLowerCase()}d.`} />
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
