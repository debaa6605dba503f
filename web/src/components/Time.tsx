// A moment shown as "3 minutes ago", with the full date in the element (and its tooltip), so it
// reads both ways; refreshed every minute while on screen. Takes Unix seconds, or an ISO 8601
// string (the few fields the API gives as date-time strings: joined_at, effective_at, ...).
// After "until" in a sentence (`until`), the date leads: "until 8 Dec, 00:50 (in 1 hour)", since
// "until in 1 hour" does not read.
import { useEffect, useState } from 'preact/hooks';
import { formatDate, timeAgo } from '../lib/format.ts';

export function Time(props: { at: number | string | null | undefined; empty?: string; until?: boolean }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 60_000);
    return () => clearInterval(t);
  }, []);
  const at = typeof props.at === 'string' ? Date.parse(props.at) / 1000 : props.at;
  if (at === null || at === undefined || Number.isNaN(at)) return <span class="muted">{props.empty ?? '—'}</span>;
  const date = formatDate(at);
  const iso = new Date(at * 1000).toISOString();
  if (props.until) {
    return (
      <time dateTime={iso} title={date}>
        {date} ({timeAgo(at, now)})
      </time>
    );
  }
  return (
    <time dateTime={iso} title={date}>
      {timeAgo(at, now)}
      <span class="date"> · {date}</span>
    </time>
  );
}
