// Reading something again on a fixed beat while a page (or a dialog) shows it: a machine's state
// every 5 s, a worker bootstrap every 2 s until its server joined. One read at a time (a slow
// answer is not overtaken by the next tick), none while the tab is hidden, none once `active` is
// false, and the timer stops with the component.
import { useEffect, useRef } from 'preact/hooks';

export function usePoll(read: () => Promise<unknown>, everyMs: number, active = true): void {
  // The latest read function, so a re-render with new closures needs no new timer.
  const latest = useRef(read);
  latest.current = read;
  useEffect(() => {
    if (!active) return;
    let busy = false;
    const t = setInterval(() => {
      if (busy || document.hidden) return;
      busy = true;
      const done = () => {
        busy = false;
      };
      // A read reports its own errors (useApi keeps them for the page); a rejection only ends the tick.
      latest.current().then(done, done);
    }, everyMs);
    return () => clearInterval(t);
  }, [everyMs, active]);
}
