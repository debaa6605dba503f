// A confirmation before an action that cannot be taken back (or that is audited, like revealing a
// secret): a Dialog with the action's button and Cancel (Escape cancels too).
import type { ComponentChildren } from 'preact';
import { Dialog } from './Dialog.tsx';

export function Confirm(props: {
  open: boolean;
  title: string;
  children?: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <Dialog open={props.open} title={props.title} onClose={props.onCancel}>
      {props.children}
      <div class="actions">
        <button type="button" class={props.danger ? 'danger' : 'primary'} onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </Dialog>
  );
}
