// A value shown once (a new API token, a client secret) or revealed on request (a secret version):
// selectable, read-only, with a Copy button; `once` adds the warning that it cannot be shown again,
// `onHide` a Hide button (the page then drops the value), `children` a note above it; `rows` shows a
// multi-line value (a cloud-init file) in a read-only text area with its lines kept.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

export function CopyValue(props: { label: string; value: string; once?: boolean; onHide?: () => void; children?: ComponentChildren; rows?: number }) {
  const [copied, setCopied] = useState(false);
  async function copy() {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  }
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
