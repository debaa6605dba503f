// A state as a coloured badge with its name in words (colour is never the only signal).
import { humanState } from '../lib/format.ts';

const TONE: Record<string, string> = {
  SUCCEEDED: 'good', active: 'good', healthy: 'good', enabled: 'good', completed: 'good', succeeded: 'good', applied: 'good', ok: 'good',
  RUNNING: 'busy', running: 'busy', pending: 'busy', provisioning: 'busy', rendering: 'busy', syncing: 'busy', deleting: 'busy', releasing: 'busy', canceling: 'busy',
  FAILED: 'bad', failed: 'bad', degraded: 'bad', suspended: 'bad', timed_out: 'bad', rejected: 'bad',
  // machines (upper case, as the API names them) and worker bootstraps
  ACTIVE: 'good', PROVISIONING: 'busy', JOINING: 'busy', DELETING: 'busy', UNREACHABLE: 'bad', SUSPENDED: 'muted', used: 'good', revoked: 'muted', expired: 'muted',
  CANCELLED: 'muted', canceled: 'muted', disabled: 'muted', destroyed: 'muted', skipped: 'muted', deleted: 'muted', soft_deleted: 'muted', evicted: 'muted',
};

export function StateBadge(props: { state: string }) {
  return <span class={`badge badge-${TONE[props.state] ?? 'muted'}`}>{humanState(props.state)}</span>;
}
