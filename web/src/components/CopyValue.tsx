// A value shown once (a new API token, a client secret) or revealed on request (a secret version):
// selectable, read-only, with a Copy button; `once` adds the warning that it cannot be shown again,
// `onHide` a Hide button (the page then drops the value), `children` a note above it; `rows` shows a
// multi-line value (a cloud-init file) in a read-only text area with its lines kept. CopyButton is
// its button alone, for text the page shows its own way.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

/** Copy and Copied: whether the last click put `text` on the clipboard; `since` changes (new content) read Copy again. */
function useCopy(since: unknown): { copied: boolean; copy: (text: string) => Promise<void> } {
  const [copied, setCopied] = useState<{ at: unknown } | null>(null);
  async function copy(text: string) {
    try {
      await navigator.clipboard.writeText(text);
      setCopied({ at: since });
    } catch {
      setCopied(null);
    }
  }
  return { copied: copied !== null && copied.at === since, copy };
}

/**
 * A Copy button alone, for content the page already shows (the install's log lines): `text` is
 * read when clicked; it reads Copied until `since` changes.
 */
export function CopyButton(props: { text: () => string; since?: unknown; disabled?: boolean; label?: string }) {
  const { copied, copy } = useCopy(props.since);
  return (
    <button type="button" disabled={props.disabled} onClick={() => void copy(props.text())}>
      {copied ? 'Copied' : (props.label ?? 'Copy')}
    </button>
  );
}

export function CopyValue(props: { label: string; value: string; once?: boolean; onHide?: () => void; children?: ComponentChildren; rows?: number }) {
  const { copied, copy: write } = useCopy(props.value);
  const copy = () => write(props.value);
  return (
    <div class="notice notice-good" role="status">
      {props.once && <p><strong>Copy it now:</strong> it is shown only this once.</p>}
      {props.children}
      <label class="field">
        <span>{props.label}</span>
        <span class="copy-row">
          {props.rows ? (
            <textarea readOnly rows={props.rows} value={props.value} class="code" spellcheck={false} wrap="off" onFocus={(e) => e.currentTarget.select()} />
          ) : (
            <input readOnly value={props.value} class="code" onFocus={(e) => e.currentTarget.select()} />
          )}
          <button type="button" onClick={copy}>
            {copied ? 'Copied' : 'Copy'}
          </button>
          {props.onHide && (
            <button type="button" onClick={props.onHide}>
              Hide
            </button>
          )}
        </span>
      </label>
    </div>
  );
}
