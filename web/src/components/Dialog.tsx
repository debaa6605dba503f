// A modal dialog: a native <dialog> opened with showModal, so focus moves into it, the page behind
// is inert, Escape closes it (onClose) and focus returns to what opened it. Confirm is one; larger
// flows (adding a server) put their own content and buttons in it.
import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';

export function Dialog(props: { open: boolean; title: string; onClose: () => void; children?: ComponentChildren; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  // One id per dialog: a page may hold several (change a role, remove a member).
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) d.showModal();
    if (!props.open && d.open) d.close();
  }, [props.open]);
  return (
    <dialog ref={ref} class={props.wide ? 'dialog dialog-wide' : 'dialog'} aria-labelledby={titleId} onCancel={(e) => (e.preventDefault(), props.onClose())}>
      <h2 id={titleId}>{props.title}</h2>
      {props.open && props.children}
    </dialog>
  );
}
