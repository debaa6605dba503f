// Writing to the agent: Enter sends, Shift+Enter starts a new line. While a turn runs the message
// field is read-only and Send is off (a session takes one turn at a time); the field keeps the
// focus, so a keyboard user is where they were when the agent is done. Cancel stops the turn.
import { useId, useState } from 'preact/hooks';
import type { ApiError } from '../../lib/api.ts';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';

export function Composer(props: {
  agentName: string;
  /** a turn is running or waiting, and why in words: nothing new can be sent */
  busy: string | null;
  /** why nothing can be sent at all (an archived agent or chat), if so */
  closed?: string;
  sending: boolean;
  error: ApiError | undefined;
  /** resolves true when the message was taken (the field empties then) */
  onSend: (message: string) => Promise<boolean>;
  onCancel?: () => void;
  cancelling?: boolean;
}) {
  const [text, setText] = useState('');
  const id = useId();
  const blocked = props.busy !== null || props.sending || Boolean(props.closed);

  async function send() {
    if (blocked || !text.trim()) return;
    if (await props.onSend(text)) setText('');
  }

  const hint = props.closed ?? props.busy ?? 'Enter sends; Shift+Enter starts a new line.';
  return (
    <form
      class="composer card"
      aria-label="Message"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <ErrorNotice error={props.error} shownFields={[]} title="The message was not sent." />
      <label for={id}>Message to {props.agentName}</label>
      <textarea
        id={id}
        rows={3}
        maxLength={50_000}
        value={text}
        readOnly={blocked}
        aria-disabled={blocked || undefined}
        aria-describedby={`${id}-hint`}
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
            e.preventDefault();
            void send();
          }
        }}
      />
      <p id={`${id}-hint`} class="hint">
        {hint}
      </p>
      <div class="actions">
        <button type="submit" class="primary" disabled={blocked || !text.trim()}>
          Send
        </button>
        {props.onCancel && (
          <button type="button" class="danger" disabled={props.cancelling} onClick={props.onCancel}>
            Cancel turn
          </button>
        )}
      </div>
    </form>
  );
}
