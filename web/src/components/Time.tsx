// A moment shown as "3 minutes ago", with the full date in the element (and its tooltip), so it
// reads both ways; refreshed every minute while on screen.
import { useEffect, useState } from 'preact/hooks';
import { formatDate, timeAgo } from '../lib/format.ts';

export function Time(props: { at: number | null | undefined; empty?: string }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 60_000);
    return () => clearInterval(t);
  }, []);
  if (props.at === null || props.at === undefined) return <span class="muted">{props.empty ?? '—'}</span>;
  const date = formatDate(props.at);
  return (
    <time dateTime={new Date(props.at * 1000).toISOString()} title={date}>
      {timeAgo(props.at, now)}
      <span class="date"> · {date}</span>
    </time>
  );
}
