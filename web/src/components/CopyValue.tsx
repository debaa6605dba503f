// A value shown once (a new API token, a client secret): selectable, with a Copy button, and the
// warning that it cannot be shown again.
import { useState } from 'preact/hooks';

export function CopyValue(props: { label: string; value: string; once?: boolean }) {
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
      <label class="field">
        <span>{props.label}</span>
        <span class="copy-row">
          <input readOnly value={props.value} class="code" onFocus={(e) => e.currentTarget.select()} />
          <button type="button" onClick={copy}>
            {copied ? 'Copied' : 'Copy'}
          </button>
        </span>
      </label>
    </div>
  );
}
