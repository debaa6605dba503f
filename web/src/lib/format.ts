// How values read on a page: dates as dates and "3 minutes ago", API field names as human labels.

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 86400],
  ['month', 30 * 86400],
  ['week', 7 * 86400],
  ['day', 86400],
  ['hour', 3600],
  ['minute', 60],
];

/** Unix seconds as a local date and time ("Nov 24, 2026, 10:02 AM"). */
export function formatDate(unixSeconds: number): string {
  return dateFormat.format(new Date(unixSeconds * 1000));
}

/** Unix seconds relative to `now` (ms): "3 minutes ago", "in 2 days", "just now". */
export function timeAgo(unixSeconds: number, now = Date.now()): string {
  const diff = unixSeconds - Math.round(now / 1000);
  const abs = Math.abs(diff);
  if (abs < 45) return 'just now';
  for (const [unit, size] of UNITS) {
    if (abs >= size * 0.9 || unit === 'minute') return relative.format(Math.round(diff / size), unit);
  }
  return relative.format(diff, 'second');
}

/** Bytes as "12 KB". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** Labels for field names whose words alone would read wrong. */
const LABELS: Record<string, string> = {
  id: 'ID',
  html_url: 'Page',
  etag: 'Version tag',
  workspace_id: 'Workspace',
  owner_id: 'Owner',
  owner_type: 'Owner type',
  created_at: 'Created',
  updated_at: 'Updated',
  started_at: 'Started',
  completed_at: 'Completed',
  expires_at: 'Expires',
  last_used_at: 'Last used',
  read_at: 'Read',
  last_error: 'Last error',
  display_type: 'Display as',
  package_id: 'Package',
  version_id: 'Version',
  cluster_id: 'Cluster',
  install_id: 'Install',
  snippet_id: 'Snippet',
  secret_id: 'Secret',
  operation_id: 'Operation',
  parent_operation_id: 'Parent operation',
  user_id: 'User',
  actor_id: 'Actor',
  request_id: 'Request ID',
  url: 'URL',
  urls: 'URLs',
};

/** `last_used_at` -> "Last used"; `display_type` -> "Display as"; `max_size` -> "Max size". */
export function humanLabel(field: string): string {
  const known = LABELS[field];
  if (known) return known;
  const words = field.replace(/_id$/, '').replace(/_at$/, '').split(/[_.]/).filter(Boolean).join(' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A state such as SUCCEEDED or degraded as "Succeeded", "Degraded". */
export function humanState(state: string): string {
  const s = state.replace(/_/g, ' ').toLowerCase();
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** Milliseconds as "12 ms", "1.4 s", "42 s", "2 min 5 s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 9950) return `${(ms / 1000).toFixed(1)} s`;
  const total = Math.round(ms / 1000);
  if (total < 60) return `${total} s`;
  const seconds = total % 60;
  return seconds ? `${Math.floor(total / 60)} min ${seconds} s` : `${total / 60} min`;
}
