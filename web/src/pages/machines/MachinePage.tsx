// A machine's page (its html_url, /machines/{id}): its state read again every 5 s while the page
// is open and when an operation on it ends, its fields and its agent's facts under human labels,
// its cluster linked, its name and expiry (MachineSettings), the actions its state allows
// (suspend, resume, delete after a confirmation; each an operation followed live, each sent with
// the etag last read: a 409 reloads it and offers to act again) and its operations.
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { useRecord } from '../../lib/useRecord.ts';
import { usePoll } from '../../lib/usePoll.ts';
import { idempotencyKey } from '../../lib/idempotency.ts';
import { useSession } from '../../lib/session.tsx';
import { roleAtLeast } from '../../lib/roles.ts';
import { factRows, machineActions, machineName, MACHINE_OPERATION_TITLES, ORIGIN_WORDS, PROVIDER_WORDS, STATE_NOTES, type Machine } from '../../lib/machines.ts';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { Code, Fields } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { useAction } from '../../components/Form.tsx';
import { OperationLive } from '../../components/OperationLive.tsx';
import { Confirm } from '../../components/Confirm.tsx';
import { Conflict, isConflict } from '../../components/Conflict.tsx';
import { NeedsRole } from '../../components/RoleNote.tsx';
import { OperationsOf } from '../operations/Operations.tsx';
import { MachineSettings } from './MachineSettings.tsx';

type Operation = Schemas['Operation'];
type Lifecycle = 'suspend' | 'resume' | 'delete';

/** How often the page reads the machine again while it is open. */
export const MACHINE_POLL_MS = 5000;

function start(what: Lifecycle, m: Machine): Promise<Operation> {
  const path = { id: m.id };
  if (what === 'delete') return ok(client.DELETE('/v1/machines/{id}', { params: { path, header: { 'if-match': m.etag } } }));
  const header = { 'if-match': m.etag, 'idempotency-key': idempotencyKey() };
  return what === 'suspend' ? ok(client.POST('/v1/machines/{id}:suspend', { params: { path, header } })) : ok(client.POST('/v1/machines/{id}:resume', { params: { path, header } }));
}

export function MachinePage(props: { id?: string; path?: string }) {
  const id = props.id!;
  const machine = useRecord(id, () => ok(client.GET('/v1/machines/{id}', { params: { path: { id } } })));
  const m = machine.data;
  const cluster = useApi(() => (m ? ok(client.GET('/v1/clusters/{id}', { params: { path: { id: m.cluster_id } } })) : Promise.resolve(undefined)), [m?.cluster_id]);
  const admin = roleAtLeast(useSession().workspace?.role, 'admin');
  const action = useAction();
  const [last, setLast] = useState<Lifecycle | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [op, setOp] = useState<Operation | undefined>(undefined);
  const [reloadKey, setReloadKey] = useState(0);
  const { route } = useLocation();
  // Live state: read again on a beat until the machine is gone (a 404 after its deletion).
  usePoll(machine.reload, MACHINE_POLL_MS, !machine.error);

  const finished = (done: Operation) => {
    if (done.metadata.type === 'machine.delete' && done.state === 'SUCCEEDED') return route('/machines');
    setReloadKey((k) => k + 1);
    void machine.reload();
  };
  const following = op && <OperationLive key={op.id} id={op.id} initial={op} title={MACHINE_OPERATION_TITLES[op.metadata.type] ?? 'Operation'} onDone={finished} />;
  // A deletion removes the machine before its operation ends: the page keeps following it.
  if (machine.error) {
    return (
      <Page title="Machine" breadcrumb={['Machines', '/machines']}>
        {following ?? <ErrorNotice error={machine.error} title="The machine could not be loaded." />}
      </Page>
    );
  }
  if (!m) return <p aria-busy="true">Loading…</p>;

  async function act(what: Lifecycle, current: Machine) {
    setConfirming(false);
    setLast(what);
    const started = await action.run(() => start(what, current));
    if (!started) return;
    setOp(started);
    setReloadKey((k) => k + 1);
    void machine.reload();
  }

  const allowed = machineActions(m.state);
  const name = machineName(m);
  return (
    <Page
      title={name}
      subtitle={<>Machine · <StateBadge state={m.state} /></>}
      breadcrumb={['Machines', '/machines']}
      actions={
        admin && (
          <>
            {allowed.suspend && (
              <button type="button" disabled={action.busy} onClick={() => void act('suspend', m)}>
                Suspend
              </button>
            )}
            {allowed.resume && (
              <button type="button" class="primary" disabled={action.busy} onClick={() => void act('resume', m)}>
                Resume
              </button>
            )}
            {allowed.remove && (
              <button type="button" class="danger" disabled={action.busy} onClick={() => setConfirming(true)}>
                Delete
              </button>
            )}
          </>
        )
      }
    >
      <p class="muted" aria-live="polite">
        {STATE_NOTES[m.state]}
      </p>
      <Conflict error={action.error} what="The machine" onReload={() => machine.reload()} onReapply={() => last && void act(last, m)} busy={action.busy} />
      {!isConflict(action.error) && <ErrorNotice error={action.error} />}
      {following}
      <Section title="Details">
        <Fields
          rows={[
            ['State', <StateBadge state={m.state} />],
            ['Name', m.name],
            ['Node name', m.node_name ? <Code>{m.node_name}</Code> : 'Not joined yet'],
            ['Cluster', <a href={`/clusters/${m.cluster_id}`}>{cluster.data?.name ?? m.cluster_id}</a>],
            ['Origin', ORIGIN_WORDS[m.origin]],
            ['Provider', PROVIDER_WORDS[m.provider]],
            ['Instance type', m.instance_type ?? undefined],
            ['Last heartbeat', <Time at={m.last_heartbeat_at} empty="None yet" />],
            ['Expires', <Time at={m.expires_at} empty="Never" />],
            ['ID', <Code>{m.id}</Code>],
            ['Created', <Time at={m.created_at} />],
            ['Updated', <Time at={m.updated_at} />],
          ]}
        />
      </Section>
      <Section title="Server">
        {m.facts ? <Fields rows={factRows(m.facts)} /> : <p class="muted">Its agent has not reported the server's facts yet.</p>}
      </Section>
      <Section title="Name and expiry">
        <NeedsRole need="admin" what="rename machines or change their expiry, suspend, resume or delete them">
          <MachineSettings machine={m} reload={machine.reload} onSaved={machine.set} />
        </NeedsRole>
      </Section>
      <Section title="Operations">
        <OperationsOf ownerType="machine" ownerId={m.id} reloadKey={reloadKey} />
      </Section>
      <Confirm open={confirming} title={`Delete the machine ${name}?`} confirmLabel="Delete machine" danger onConfirm={() => void act('delete', m)} onCancel={() => setConfirming(false)}>
        <p>
          Its node is cordoned and drained, then removed from the cluster; {m.origin === 'provisioned' ? 'its server is destroyed' : 'its agent is told to stop'} and its credential revoked. This cannot be undone.
        </p>
      </Confirm>
    </Page>
  );
}
