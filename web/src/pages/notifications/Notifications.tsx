// The signed-in person's notifications (they belong to people, across their workspaces): the list,
// unread only or all, each linked to the page of what it is about; marking one or all read. After
// each change the bell in the layout is told to count again (the svc:notifications event).
import { useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useSession } from '../../lib/session.tsx';
import { resourceHref } from '../../lib/links.ts';
import { ListView } from '../../components/ListView.tsx';
import { Page } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField, useAction } from '../../components/Form.tsx';

type Notification = Schemas['Notification'];

const SHOW: [string, string][] = [
  ['true', 'Unread'],
  ['', 'All'],
  ['false', 'Read'],
];
const SEVERITY: Record<Notification['severity'], string> = { info: 'Info', warning: 'Warning', critical: 'Critical' };
const SEVERITY_TONE: Record<Notification['severity'], string> = { info: 'muted', warning: 'busy', critical: 'bad' };

/** Tells the bell (Layout) to count the unread notifications again. */
function recount() {
  window.dispatchEvent(new Event('svc:notifications'));
}

export function Notifications(_props: { path?: string }) {
  const { workspace, workspaces, switchTo } = useSession();
  const [unread, setUnread] = useState('true');
  const [changed, setChanged] = useState(0);
  const [marked, setMarked] = useState<string | undefined>(undefined);
  const action = useAction();

  async function markRead(n: Notification) {
    const read = await action.run(() => ok(client.POST('/v1/notifications/{id}:markRead', { params: { path: { id: n.id } } })));
    if (!read) return;
    setMarked(`Marked “${n.title}” read.`);
    setChanged((c) => c + 1);
    recount();
  }
  async function markAll() {
    const result = await action.run(() => ok(client.POST('/v1/notifications:markAllRead', {})));
    if (!result) return;
    setMarked(result.updated === 1 ? 'Marked 1 notification read.' : `Marked ${result.updated} notifications read.`);
    setChanged((c) => c + 1);
    recount();
  }

  /** The link to what a notification is about, in its workspace (switched to on the way). */
  function about(n: Notification) {
    const href = resourceHref(n.resource_type, n.resource_id, n.context);
    if (!href) return <strong>{n.title}</strong>;
    const elsewhere = n.workspace_id && n.workspace_id !== workspace?.id ? workspaces.find((w) => w.id === n.workspace_id) : undefined;
    return (
      <a href={href} onClick={() => elsewhere && switchTo(elsewhere.id)}>
        {n.title}
        {elsewhere && <span class="muted"> (in {elsewhere.name})</span>}
      </a>
    );
  }

  return (
    <Page
      title="Notifications"
      subtitle="What needs your attention in your workspaces: failed operations, degraded installs, quotas, plan changes, expiring tokens."
      actions={
        <button type="button" disabled={action.busy} onClick={markAll}>
          Mark all read
        </button>
      }
    >
      <ErrorNotice error={action.error} title="Not marked read." />
      <p class="visually-hidden" role="status">
        {marked ?? ''}
      </p>
      <div class="filters">
        <SelectField label="Show" value={unread} onValue={setUnread} options={SHOW} />
      </div>
      <ListView<Notification>
        label="Notifications"
        deps={[unread, changed]}
        load={(cursor, limit) => ok(client.GET('/v1/notifications', { params: { query: { cursor, limit, unread: (unread || undefined) as 'true' | 'false' | undefined } } }))}
        rowKey={(n) => n.id}
        columns={[
          {
            label: 'Notification',
            cell: (n) => (
              <>
                <span class={`badge badge-${SEVERITY_TONE[n.severity]}`}>{SEVERITY[n.severity]}</span> {about(n)}
                <p class="small notification-body">{n.body}</p>
              </>
            ),
          },
          { label: 'Received', cell: (n) => <Time at={n.created_at} /> },
          {
            label: 'Read',
            cell: (n) =>
              n.read_at !== undefined ? (
                <Time at={n.read_at} />
              ) : (
                <button type="button" disabled={action.busy} onClick={() => markRead(n)}>
                  Mark read<span class="visually-hidden"> {n.title}</span>
                </button>
              ),
          },
        ]}
        empty={<p>{unread === 'true' ? 'Nothing unread.' : 'No notifications.'}</p>}
      />
    </Page>
  );
}
