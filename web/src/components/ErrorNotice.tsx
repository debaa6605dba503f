// An API error as a person reads it: the message, what to do about the common codes, the field
// violations that no form field shows, and the request id to quote when asking for help.
import type { ApiError } from '../lib/api.ts';

const HINT: Partial<Record<string, string>> = {
  PERMISSION_DENIED: 'Your role in this workspace does not allow this.',
  NOT_FOUND: 'It may have been deleted, or it belongs to a workspace you are not a member of.',
  RESOURCE_EXHAUSTED: 'A quota or rate limit was reached.',
  UNAVAILABLE: 'The server is unavailable; try again in a moment.',
};

export function ErrorNotice(props: { error: ApiError | undefined; shownFields?: string[]; title?: string }) {
  const e = props.error;
  if (!e) return null;
  const shown = new Set(props.shownFields ?? []);
  const rest = (e.body.field_violations ?? []).filter((v) => !shown.has(v.field));
  return (
    <div class="notice notice-error" role="alert">
      <p>
        <strong>{props.title ?? 'That did not work.'}</strong> {e.message}
      </p>
      {HINT[e.code] && <p>{HINT[e.code]}</p>}
      {rest.length > 0 && (
        <ul>
          {rest.map((v) => (
            <li key={v.field}>
              <code>{v.field}</code>: {v.description}
            </li>
          ))}
        </ul>
      )}
      {e.body.request_id && <p class="muted small">Request ID {e.body.request_id}</p>}
    </div>
  );
}
