// The workspace's audit log: who did what to which resource, when, with the request id; filtered
// by action and by resource id as GET /v1/audit_events allows, paged through its cursors. Owners
// and admins may read it; anyone else sees the API's refusal with their role's explanation.
import { useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useWorkspace } from '../../lib/session.tsx';
import { resourceHref } from '../../lib/links.ts';
import { humanLabel } from '../../lib/format.ts';
import { ListView } from '../../components/ListView.tsx';
import { Page } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { Code } from '../../components/Fields.tsx';
import { SelectField, TextField } from '../../components/Form.tsx';

type AuditEvent = Schemas['AuditEvent'];
type Action = AuditEvent['action'];

const ACTIONS: Record<Action, string> = {
  'secret.create': 'Secret created',
  'secret.update': 'Secret changed',
  'secret.delete': 'Secret deleted',
  'secret.undelete': 'Secret restored',
  'secret.purge': 'Secret purged',
  'secret.version.create': 'Secret version added',
  'secret.version.enable': 'Secret version enabled',
  'secret.version.disable': 'Secret version disabled',
  'secret.version.destroy': 'Secret version destroyed',
  'secret.version.access': 'Secret value read',
  'api_token.create': 'API token created',
  'api_token.revoke': 'API token revoked',
  'oauth_client.create': 'OAuth client registered',
  'oauth_client.delete': 'OAuth client deleted',
  'workspace.member.add': 'Member added',
  'workspace.member.update': 'Member role changed',
  'workspace.member.remove': 'Member removed',
  'workspace.invitation.create': 'Person invited',
  'workspace.invitation.revoke': 'Invitation revoked',
  'workspace.invitation.accept': 'Invitation accepted',
  'workspace.delete': 'Workspace deletion requested',
  'worker_bootstrap.create': 'Join token made for a server',
  'worker_bootstrap.use': 'Server joined with a join token',
  'worker_bootstrap.revoke': 'Join token revoked',
  'machine.create': 'Machine provisioned',
  'machine.delete': 'Machine deleted',
  'agent.create': 'Agent created',
  'agent.update': 'Agent changed',
  'agent.delete': 'Agent archived',
  'agent.undelete': 'Agent restored',
  'approval_request.approve': 'Agent change approved',
  'approval_request.reject': 'Agent change rejected',
  'offer.create': 'Offer created',
  'offer.update': 'Offer changed',
  'offer.delete': 'Offer archived',
  'offer.undelete': 'Offer restored',
  'order.commit': 'Order committed',
  'subscription.set_plan': 'Plan set by the operator',
  'cluster.create': 'Cluster registered',
  'cluster.update': 'Cluster renamed',
  'cluster.delete': 'Cluster deletion started',
  'cluster.capabilities.refresh': 'Cluster capabilities refreshed',
  'package.create': 'Package created',
  'package.version.create': 'Package version published',
  'install.create': 'Install deployed',
  'install.update': 'Install redeployed',
  'install.delete': 'Install deletion started',
  'subscription.checkout.create': 'Plan checkout opened',
  'subscription.plan_paid': 'Plan paid and raised',
  'user.two_factor.enable': 'Two-factor sign-in turned on',
  'user.two_factor.disable': 'Two-factor sign-in turned off',
  'workspace.two_factor_requirement.enable': 'Two factors required of members',
  'workspace.two_factor_requirement.disable': 'Two factors no longer required',
  'subscription.plan_renewed': 'Paid plan renewed',
  'subscription.plan_ended': 'Paid plan ended at the provider',
};
const RESOURCES: Record<AuditEvent['resource_type'], string> = {
  secret: 'Secret',
  secret_version: 'Secret version',
  api_token: 'API token',
  oauth_client: 'OAuth client',
  workspace_member: 'Member',
  workspace_invitation: 'Invitation',
  workspace: 'Workspace',
  machine: 'Machine',
  worker_bootstrap: 'Worker bootstrap',
  agent: 'Agent',
  approval_request: 'Approval request',
  offer: 'Offer',
  order: 'Order',
  cluster: 'Cluster',
  package: 'Package',
  package_version: 'Package version',
  install: 'Install',
  plan_checkout: 'Plan checkout',
  user: 'Person',
};
const ACTION_OPTIONS: [string, string][] = [['', 'Every action'], ...(Object.entries(ACTIONS) as [string, string][])];

/**
 * Who acted, in words, as the event recorded them: a person by name and e-mail, a token, client or
 * machine agent by name, or svc itself. Events older than kept names show the id.
 */
export function Actor(props: { actor: AuditEvent['actor'] }) {
  const { type, id, name, email } = props.actor;
  const named = name ?? <Code>{id}</Code>;
  if (type === 'user') {
    if (name && email) return <span title={id}>{name} <span class="muted">&lt;{email}&gt;</span></span>;
    return <span title={id}>{email ?? named}</span>;
  }
  if (type === 'api_token') return <>API token <a href="/settings/tokens" title={id}>{named}</a></>;
  if (type === 'oauth_client') return <>OAuth client <a href="/settings/oauth-clients" title={id}>{named}</a></>;
  if (type === 'machine') return <>Machine <a href={`/machines/${id}`} title={id}>{named}</a></>;
  if (id === 'operator') return <>The operator of this service</>;
  return <>svc ({id})</>;
}

/** The resource by the name it had when the event was recorded (its id in the tooltip), linked to its page. */
function Resource(props: { e: AuditEvent }) {
  const { e } = props;
  const href = resourceHref(e.resource_type, e.resource_id, e.metadata);
  const kind = RESOURCES[e.resource_type] ?? e.resource_type;
  const what = e.resource_name ? <>{kind} <strong>{e.resource_name}</strong></> : <>{kind} {e.resource_id}</>;
  return href ? <a href={href} title={e.resource_id}>{what}</a> : <span title={e.resource_id}>{what}</span>;
}

function Details(props: { metadata: Record<string, string> }) {
  const entries = Object.entries(props.metadata);
  if (entries.length === 0) return null;
  return <p class="small muted">{entries.map(([k, v]) => `${humanLabel(k)}: ${v}`).join(' · ')}</p>;
}

export function Audit(_props: { path?: string }) {
  const ws = useWorkspace();
  const [action, setAction] = useState('');
  const [resourceText, setResourceText] = useState('');
  const [resourceId, setResourceId] = useState('');

  return (
    <Page title="Audit log" subtitle={`Who changed what in ${ws.name}, and every read of a secret value. Entries are never changed or removed.`}>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setResourceId(resourceText.trim());
        }}
      >
        <SelectField label="Action" value={action} onValue={setAction} options={ACTION_OPTIONS} />
        <TextField label="Resource ID" value={resourceText} onValue={setResourceText} maxLength={64} placeholder="sec_…, clu_…, inst_…" />
        <button type="submit">Filter</button>
      </form>
      <ListView<AuditEvent>
        label="Audit events"
        deps={[ws.id, action, resourceId]}
        load={(cursor, limit) => ok(client.GET('/v1/audit_events', { params: { query: { cursor, limit, action: (action || undefined) as Action | undefined, resource_id: resourceId || undefined } } }))}
        rowKey={(e) => e.id}
        columns={[
          { label: 'When', cell: (e) => <Time at={e.created_at} /> },
          { label: 'Actor', cell: (e) => <Actor actor={e.actor} /> },
          { label: 'Action', cell: (e) => <>{ACTIONS[e.action] ?? e.action}<Details metadata={e.metadata} /></> },
          { label: 'Resource', cell: (e) => <Resource e={e} /> },
          { label: 'Request ID', cell: (e) => (e.request_id ? <Code>{e.request_id}</Code> : <span class="muted">by svc</span>) },
        ]}
        empty={<p>{action || resourceId ? 'No events match these filters.' : 'Nothing recorded yet.'}</p>}
      />
    </Page>
  );
}
