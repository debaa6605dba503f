// Operations: the workspace's list (filter by what they act on and by state), an operation's page followed live,
// and the compact list of one resource's operations that record pages show.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok, type Schemas } from '../../lib/api.ts';
import type { paths } from '../../../../src/cli/generated/api.ts';
import { ListView } from '../../components/ListView.tsx';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { Code, Fields } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField } from '../../components/Form.tsx';
import { OperationProgress, useOperation, type Operation } from '../../components/OperationLive.tsx';
import { useRecord } from '../../lib/useRecord.ts';
import { resourceHref } from '../../lib/links.ts';

type ListQuery = NonNullable<paths['/v1/operations']['get']['parameters']['query']>;
type OwnerType = ListQuery['owner_type'];

/** Where an operation's owner has a page (the workspace's own operations open the plan page). */
export function ownerHref(op: Pick<Operation, 'owner_type' | 'owner_id'>): string | null {
  return op.owner_type === 'workspace' ? null : resourceHref(op.owner_type, op.owner_id);
}

/** "install.create" -> "Install create". */
export function operationLabel(op: Pick<Operation, 'metadata'>): string {
  const t = (op.metadata as { type: string }).type.replace(/[._]/g, ' ');
  return t.charAt(0).toUpperCase() + t.slice(1);
}

/** Who started it: a person by name and e-mail, a token or client by name, or svc itself; the id in the tooltip. */
export function StartedBy(props: { op: Pick<Operation, 'created_by' | 'created_by_name' | 'created_by_email'> }) {
  const { created_by: id, created_by_name: name, created_by_email: email } = props.op;
  if (id === 'system') return <span class="muted">svc</span>;
  if (name && email) return <span title={id}>{name} <span class="muted">&lt;{email}&gt;</span></span>;
  if (email) return <span title={id}>{email}</span>;
  if (name) return <span title={id}>{id.startsWith('tok_') ? 'API token' : id.startsWith('oac_') ? 'OAuth client' : ''} {name}</span>;
  return <Code>{id}</Code>;
}

const columns = [
  { label: 'Operation', cell: (o: Operation) => <a href={`/operations/${o.id}`}>{operationLabel(o)}</a> },
  { label: 'State', cell: (o: Operation) => <StateBadge state={o.state} /> },
  { label: 'By', cell: (o: Operation) => <StartedBy op={o} /> },
  { label: 'Started', cell: (o: Operation) => <Time at={o.started_at} /> },
  { label: 'Finished', cell: (o: Operation) => <Time at={o.completed_at} empty={o.done ? '—' : 'running'} /> },
];

const ownerColumn = { label: 'On', cell: (o: Operation) => (ownerHref(o) ? <a href={ownerHref(o)!}>{o.owner_type}</a> : o.owner_type) };

const OWNER_TYPES: [string, string][] = [
  ['', 'Everything'],
  ['cluster', 'Clusters'],
  ['machine', 'Machines'],
  ['install', 'Installs'],
  ['package', 'Packages'],
  ['workspace', 'The workspace'],
];

const STATES: [string, string][] = [
  ['', 'Any state'],
  ['RUNNING', 'Running'],
  ['SUCCEEDED', 'Succeeded'],
  ['FAILED', 'Failed'],
  ['CANCELLED', 'Cancelled'],
];

export function OperationList(_props: { path?: string }) {
  const { query } = useLocation();
  const [ownerType, setOwnerType] = useState('');
  // A link may open the list filtered (the home page's "running" and "failed": /operations?state=FAILED).
  const [state, setState] = useState(STATES.some(([v]) => v && v === query.state) ? query.state! : '');
  return (
    <Page title="Operations" subtitle="Long-running work: registering clusters, deploying installs, deleting resources.">
      <div class="filters">
        <SelectField label="Acting on" value={ownerType} onValue={setOwnerType} options={OWNER_TYPES} />
        <SelectField label="State" value={state} onValue={setState} options={STATES} />
      </div>
      <OperationsTable
        query={{ owner_type: (ownerType || undefined) as OwnerType, state: (state || undefined) as ListQuery['state'] }}
        empty={<p>{ownerType || state ? 'No operations match these filters.' : 'No operations yet.'}</p>}
      />
    </Page>
  );
}

type Filters = Pick<ListQuery, 'owner_type' | 'owner_id' | 'state'>;

/** Operations matching filters, newest first, with what they act on (the home page's sections). */
export function OperationsTable(props: { query: Filters; empty: ComponentChildren; reloadKey?: unknown; label?: string }) {
  const q = props.query;
  return (
    <ListView<Operation>
      label={props.label ?? 'Operations'}
      deps={[q.owner_type, q.owner_id, q.state, props.reloadKey]}
      load={(cursor, limit) => ok(client.GET('/v1/operations', { params: { query: { cursor, limit, ...q } } }))}
      rowKey={(o) => o.id}
      columns={q.owner_id ? columns : [columns[0]!, ownerColumn, ...columns.slice(1)]}
      empty={props.empty}
    />
  );
}

/** The operations of one resource, newest first (a record page's "Operations" section). */
export function OperationsOf(props: { ownerType: OwnerType; ownerId: string; reloadKey?: unknown }) {
  return <OperationsTable query={{ owner_type: props.ownerType, owner_id: props.ownerId }} reloadKey={props.reloadKey} empty={<p class="muted">No operations.</p>} />;
}

export function OperationPage(props: { id?: string; path?: string }) {
  const id = props.id!;
  // The record is loaded once (to find its workspace); OperationLive follows it from there.
  const loaded = useRecord(id, () => ok(client.GET('/v1/operations/{id}', { params: { path: { id } } })));
  if (loaded.error) return <Page title="Operation" breadcrumb={['Operations', '/operations']}><ErrorNotice error={loaded.error} title="The operation could not be loaded." /></Page>;
  if (!loaded.data) return <p aria-busy="true">Loading…</p>;
  return <OperationView initial={loaded.data} />;
}

function OperationView(props: { initial: Operation }) {
  const { op, error, set } = useOperation(props.initial.id, props.initial);
  const o = op ?? props.initial;
  const owner = ownerHref(o);
  return (
    <Page title={operationLabel(o)} subtitle={<>Operation · <StateBadge state={o.state} /></>} breadcrumb={['Operations', '/operations']}>
      <ErrorNotice error={error} title="The operation could not be followed." />
      <OperationProgress op={o} onChange={set} />
      <Section title="Details">
        <Fields
          rows={[
            ['ID', <Code>{o.id}</Code>],
            ['Acting on', owner ? <a href={owner}>{`${o.owner_type} ${o.owner_id}`}</a> : `${o.owner_type} ${o.owner_id}`],
            ['Started by', <StartedBy op={o} />],
            ['Started', <Time at={o.started_at} />],
            ['Finished', o.done ? <Time at={o.completed_at} /> : 'Still running'],
            ['Parent operation', o.parent_operation_id ? <a href={`/operations/${o.parent_operation_id}`}>{o.parent_operation_id}</a> : undefined],
            ['Result', o.response ? <pre class="json" tabIndex={0}>{JSON.stringify(o.response, null, 2)}</pre> : undefined],
          ]}
        />
      </Section>
    </Page>
  );
}

export type { Schemas };
