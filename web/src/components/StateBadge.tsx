// A state as a coloured badge with its name in words (colour is never the only signal).
import { humanState } from '../lib/format.ts';

const TONE: Record<string, string> = {
  SUCCEEDED: 'good', active: 'good', healthy: 'good', enabled: 'good', completed: 'good', succeeded: 'good', applied: 'good', ok: 'good',
  RUNNING: 'busy', running: 'busy', pending: 'busy', provisioning: 'busy', rendering: 'busy', syncing: 'busy', deleting: 'busy', releasing: 'busy', canceling: 'busy',
  FAILED: 'bad', failed: 'bad', degraded: 'bad', suspended: 'bad', timed_out: 'bad', rejected: 'bad',
  // machines (upper case, as the API names them) and worker bootstraps
  ACTIVE: 'good', PROVISIONING: 'busy', JOINING: 'busy', DELETING: 'busy', UNREACHABLE: 'bad', SUSPENDED: 'muted', used: 'good', revoked: 'muted', expired: 'muted',
  // agents, sessions, turns and approval requests (API.md 8.6)
  ENABLED: 'good', COMPLETED: 'good', APPROVED: 'good', QUEUED: 'busy', WAITING_FOR_INPUT: 'busy', WAITING_FOR_PERMISSION: 'busy', PENDING: 'busy',
  REJECTED: 'bad', ARCHIVED: 'muted',
  CANCELLED: 'muted', canceled: 'muted', disabled: 'muted', destroyed: 'muted', skipped: 'muted', deleted: 'muted', soft_deleted: 'muted', evicted: 'muted',
};

/** `label`: the state in other words than its name (a turn's WAITING_FOR_INPUT reads "Waiting for an answer"). */
export function StateBadge(props: { state: string; label?: string }) {
  return <span class={`badge badge-${TONE[props.state] ?? 'muted'}`}>{props.label ?? humanState(props.state)}</span>;
}
