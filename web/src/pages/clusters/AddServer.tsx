// "Add a server" on a cluster's page: creates a worker bootstrap (a one-time join token, its
// lifetime chosen here), shows its command, and its cloud-init in a disclosure, once with Copy,
// then waits live for the server to join: it reads the bootstrap again every 2 s while the dialog
// is open until a machine used it (then links to it) or it can no longer be used.
import { useState } from 'preact/hooks';
import { client, ok, type ApiError, type Schemas } from '../../lib/api.ts';
import { toApiError } from '../../lib/useApi.ts';
import { usePoll } from '../../lib/usePoll.ts';
import { idempotencyKey } from '../../lib/idempotency.ts';
import { TTL_CHOICES, type WorkerBootstrap } from '../../lib/machines.ts';
import { Dialog } from '../../components/Dialog.tsx';
import { CopyValue } from '../../components/CopyValue.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField, useAction, violationOf } from '../../components/Form.tsx';
import { Time } from '../../components/Time.tsx';

type Created = Schemas['CreatedWorkerBootstrap'];

/** How often the open dialog asks whether the server joined. */
export const JOIN_POLL_MS = 2000;

export function AddServerDialog(props: { open: boolean; clusterId: string; clusterName: string; onClose: () => void }) {
  return (
    <Dialog open={props.open} title={`Add a server to ${props.clusterName}`} onClose={props.onClose} wide>
      <AddServer clusterId={props.clusterId} onClose={props.onClose} />
    </Dialog>
  );
}

function AddServer(props: { clusterId: string; onClose: () => void }) {
  const [ttl, setTtl] = useState('3600');
  const [created, setCreated] = useState<Created | undefined>(undefined);
  const action = useAction();

  async function submit(e: Event) {
    e.preventDefault();
    const made = await action.run(() =>
      ok(client.POST('/v1/clusters/{id}/worker_bootstraps', { params: { path: { id: props.clusterId }, header: { 'idempotency-key': idempotencyKey() } }, body: { ttl_seconds: Number(ttl) } })),
    );
    if (made) setCreated(made);
  }

  if (!created) {
    return (
      <form class="form" onSubmit={submit}>
        <p>
          This makes a one-time token for one server, and the command that starts the svc machine agent with it. Run the command on the server (Linux, with Node.js 20 or later): the agent joins
          the server to this cluster as a machine and keeps it in touch.
        </p>
        <ErrorNotice error={action.error} shownFields={['body.ttl_seconds']} title="No token was made." />
        <SelectField label="The token works for" value={ttl} onValue={setTtl} options={TTL_CHOICES} hint="It joins one server, once, within this time." error={violationOf(action.error, 'body.ttl_seconds')} />
        <div class="actions">
          <button type="submit" class="primary" disabled={action.busy}>
            Create join command
          </button>
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
        </div>
      </form>
    );
  }
  return (
    <>
      <CopyValue label="Command" value={created.command} once>
        <p>Run it on the server. The token in it is stored only as a hash: after you close this dialog, nobody can see it again (make another if it is lost).</p>
      </CopyValue>
      <details>
        <summary>Cloud-init user data, for a new cloud server</summary>
        <CopyValue label="Cloud-init" value={created.cloud_init} rows={8}>
          <p>The same, as user data: it installs the agent as the svc-machine systemd service when the server first boots.</p>
        </CopyValue>
      </details>
      <JoinWait clusterId={props.clusterId} initial={created} />
      <div class="actions">
        <button type="button" onClick={props.onClose}>
          Close
        </button>
      </div>
    </>
  );
}

/** The bootstrap followed until a machine used it: "Waiting…", then "Machine joined" with its link. */
function JoinWait(props: { clusterId: string; initial: WorkerBootstrap }) {
  const [b, setB] = useState<WorkerBootstrap>(props.initial);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const waiting = b.status === 'active' && b.used_by_machine_id === null;
  usePoll(
    async () => {
      try {
        setB(await ok(client.GET('/v1/clusters/{id}/worker_bootstraps/{bootstrap_id}', { params: { path: { id: props.clusterId, bootstrap_id: b.id } } })));
        setError(undefined);
      } catch (err) {
        setError(toApiError(err));
      }
    },
    JOIN_POLL_MS,
    waiting,
  );
  return (
    <div aria-live="polite">
      {b.used_by_machine_id ? (
        <div class="notice notice-good">
          <p>
            <strong>Machine joined.</strong> <a href={`/machines/${b.used_by_machine_id}`}>Open the machine</a>
          </p>
        </div>
      ) : waiting ? (
        <p aria-busy="true">
          Waiting for the server to join… The token expires <Time at={b.expires_at} />.
        </p>
      ) : (
        <p class="notice notice-warn">No server joined with this token: it is {b.status}. Make another one to add a server.</p>
      )}
      <ErrorNotice error={error} title="Could not check whether the server joined; trying again." />
    </div>
  );
}
