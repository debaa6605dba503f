// The install page's Logs region: its pods' lines live (useInstallLogs), each with its time and its
// pod and container (shortened; the full names in its title and in what Copy copies), scrolled to
// the newest while following. Pause keeps the screen still while lines keep arriving (counted, shown
// on Resume); scrolling up stops following, Follow goes back to the newest; a container filter
// starts over with that container; Copy copies the lines shown. The last 2,000 lines are kept.
//
// Screen readers: the lines are a `log`, but not a live one (aria-live off): a deploy can write
// hundreds of lines a second, which would drown everything else said. A status line says what the
// stream is doing (connecting, following, paused, reconnecting, ended) when that changes; the
// lines are read by moving into the log, which Pause holds still.
import type { RefObject } from 'preact';
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { copyText, endWords, lines, LOG_LIMIT, sourceLabel, timeOfDay } from '../../lib/install-logs.ts';
import { useInstallLogs, type InstallLogs } from '../../lib/useInstallLogs.ts';
import { SelectField } from '../../components/Form.tsx';
import { CopyButton } from '../../components/CopyValue.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';

/** How close to the bottom (px) still counts as at the bottom: following. */
const AT_BOTTOM = 8;

function statusWords(logs: InstallLogs): string {
  switch (logs.link) {
    case 'connecting':
      return 'Connecting to the logs…';
    case 'live':
      return logs.buffer.paused ? 'Paused: new lines wait until you resume.' : 'Following live: new lines appear at the bottom.';
    case 'reconnecting':
      return 'The connection was lost: reconnecting…';
    case 'ended':
      return endWords(logs.endReason);
    case 'failed':
      return 'Not following: the server refused the logs.';
  }
}

export function InstallLogs(props: { installId: string }) {
  const [container, setContainer] = useState('');
  const logs = useInstallLogs(props.installId, container);
  const { buffer } = logs;
  const view = useRef<HTMLDivElement>(null);
  const [following, setFollowing] = useState(true);

  // Following: the newest line stays in sight as lines arrive (or appear on Resume).
  useLayoutEffect(() => {
    const el = view.current;
    if (el && following) el.scrollTop = el.scrollHeight;
  }, [buffer.shown, following]);

  const onScroll = () => {
    const el = view.current;
    if (el) setFollowing(el.scrollHeight - el.scrollTop - el.clientHeight <= AT_BOTTOM);
  };
  const options: [string, string][] = [['', 'All containers'], ...logs.containers.map((c) => [c, c] as [string, string])];
  if (container && !logs.containers.includes(container)) options.push([container, container]);
  const waiting = buffer.waiting.length;
  // Following again makes sense unless the install is gone.
  const stopped = (logs.link === 'ended' && logs.endReason !== 'install_deleted' && logs.endReason !== 'access_revoked') || logs.link === 'failed';

  return (
    <>
      <div class="logs-bar">
        <SelectField label="Container" value={container} onValue={setContainer} options={options} />
        <div class="actions">
          {buffer.paused ? (
            <button type="button" onClick={logs.resume}>
              Resume{waiting > 0 && ` · ${lines(waiting, 'new')}`}
            </button>
          ) : (
            <button type="button" onClick={logs.pause}>
              Pause
            </button>
          )}
          <button type="button" aria-pressed={following} onClick={() => setFollowing((f) => !f)} title="Keep the newest line in sight">
            Follow
          </button>
          <CopyButton text={() => copyText(buffer.shown)} since={buffer.shown} disabled={buffer.shown.length === 0} label="Copy lines" />
        </div>
      </div>
      <p class="muted small logs-status" role="status">
        {statusWords(logs)}
      </p>
      {logs.link === 'failed' && <ErrorNotice error={logs.error} title="The logs could not be followed." />}
      {stopped && (
        <p>
          <button type="button" onClick={logs.again}>
            Follow again
          </button>
        </p>
      )}
      {logs.link === 'reconnecting' && logs.error && (
        <div class="notice notice-warn">
          <p>
            <strong>Trying again:</strong> {logs.error.message}
          </p>
        </div>
      )}
      {logs.notice && <p class="notice notice-warn">{logs.notice}</p>}
      {buffer.dropped > 0 && <p class="muted small">Older lines were dropped: this view keeps the last {LOG_LIMIT.toLocaleString('en')}.</p>}
      <LogView logs={logs} view={view} onScroll={onScroll} container={container} />
    </>
  );
}

function LogView(props: { logs: InstallLogs; view: RefObject<HTMLDivElement | null>; onScroll: () => void; container: string }) {
  const { logs } = props;
  const shown = logs.buffer.shown;
  if (shown.length === 0 && logs.buffer.waiting.length === 0) {
    if (logs.link === 'connecting') {
      return (
        <div class="logs logs-skeleton" aria-hidden="true">
          <span />
          <span />
          <span />
        </div>
      );
    }
    if (logs.link === 'live' || logs.link === 'reconnecting') {
      return <p class="muted">{props.container ? `No log lines yet from ${props.container}.` : 'No log lines yet: they appear here as the install’s containers write them.'}</p>;
    }
    return null;
  }
  return (
    <div ref={props.view} class="logs install-logs" role="log" aria-live="off" aria-label="Log lines" tabIndex={0} onScroll={props.onScroll}>
      {shown.map((l, i) => (
        <div key={logs.buffer.offset + i} class="log-line">
          <span class="log-at">{timeOfDay(l.timestamp)}</span> <span class="log-src" title={`${l.pod}/${l.container}`}>{sourceLabel(l)}</span> <span class="log-text">{l.line}</span>
        </div>
      ))}
    </div>
  );
}
