// The workspace at a glance (API.md 8.8): installs and their health, operations running and
// recently failed, quota use and unread notifications, each linking to its page.
import { client, ok, type Schemas } from '../lib/api.ts';
import { useApi } from '../lib/useApi.ts';
import { useWorkspace } from '../lib/session.tsx';
import { resourceHref } from '../lib/links.ts';
import { humanState } from '../lib/format.ts';
import { Page, Section } from '../components/Page.tsx';
import { ErrorNotice } from '../components/ErrorNotice.tsx';
import { QuotaBars } from '../components/QuotaBars.tsx';
import { Time } from '../components/Time.tsx';
import { InstallsTable } from './installs/Installs.tsx';
import { OperationsTable } from './operations/Operations.tsx';

function UnreadNotifications() {
  const unread = useApi(() => ok(client.GET('/v1/notifications', { params: { query: { unread: 'true', limit: 5 } } })), []);
  if (unread.error) return <ErrorNotice error={unread.error} title="Notifications could not be loaded." />;
  if (!unread.data) return <p aria-busy="true">Loading…</p>;
  if (unread.data.data.length === 0) return <p class="muted">Nothing unread.</p>;
  return (
    <ul class="plain-list">
      {unread.data.data.map((n: Schemas['Notification']) => {
        const href = resourceHref(n.resource_type, n.resource_id, n.context);
        return (
          <li key={n.id}>
            {href ? <a href={href}>{n.title}</a> : n.title} <span class="muted small">· <Time at={n.created_at} /></span>
          </li>
        );
      })}
    </ul>
  );
}

function Quotas() {
  const quotas = useApi(() => ok(client.GET('/v1/quotas', {})), []);
  if (quotas.error) return <ErrorNotice error={quotas.error} title="Quotas could not be loaded." />;
  if (!quotas.data) return <p aria-busy="true">Loading…</p>;
  return <QuotaBars quotas={quotas.data} />;
}

export function Home(_props: { path?: string }) {
  const ws = useWorkspace();
  return (
    <Page title={ws.name} subtitle={`Workspace home · ${humanState(ws.plan.tier)} plan · you are ${ws.role}`} actions={<a class="button primary" href="/installs/new">Install a package</a>}>
      <div class="home-grid">
        <Section title="Installs" actions={<a href="/installs">All installs</a>}>
          <InstallsTable filters={{}} empty={<p>No installs yet. <a href="/installs/new">Install a package</a> on a cluster.</p>} />
        </Section>
        <Section title="Running operations" actions={<a href="/operations">All operations</a>}>
          <OperationsTable query={{ state: 'RUNNING' }} empty={<p class="muted">Nothing running.</p>} />
        </Section>
        <Section title="Recently failed">
          <OperationsTable query={{ state: 'FAILED' }} empty={<p class="muted">No failed operations.</p>} />
        </Section>
        <Section title="Quotas" actions={<a href="/settings/plan">Plan and quotas</a>}>
          <Quotas />
        </Section>
        <Section title="Unread notifications" actions={<a href="/notifications">All notifications</a>}>
          <UnreadNotifications />
        </Section>
      </div>
    </Page>
  );
}
