// "Provision a machine" on a cluster's page: POST /v1/machines (machine.create) with the compute
// provider's server type, a name and an optional expiry. The API lists the server types only in
// its OpenAPI description, so the hint names the usual ones; a type the service's provider does
// not offer is refused at the field with the list of those it does, shown there.
import { useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { idempotencyKey } from '../../lib/idempotency.ts';
import { MACHINE_EXPIRY_CHOICES } from '../../lib/machines.ts';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { ExpiryFields, useExpiry } from '../../components/ExpiryFields.tsx';
import { TextField, useAction, violationOf } from '../../components/Form.tsx';

const FIELDS = ['body.instance_type', 'body.name', 'body.expires_at'];

export function ProvisionMachine(props: { clusterId: string; onStarted: (op: Schemas['Operation']) => void; onCancel: () => void }) {
  const [instanceType, setInstanceType] = useState('');
  const [name, setName] = useState('');
  const expiry = useExpiry('never');
  const action = useAction();

  async function submit(e: Event) {
    e.preventDefault();
    const at = expiry.read();
    if (!at) return;
    const body = { cluster_id: props.clusterId, instance_type: instanceType.trim(), ...(name.trim() ? { name: name.trim() } : {}), ...(at.value === undefined ? {} : { expires_at: at.value }) };
    const started = await action.run(() => ok(client.POST('/v1/machines', { params: { header: { 'idempotency-key': idempotencyKey() } }, body })));
    if (started) props.onStarted(started);
  }

  return (
    <form class="form card" onSubmit={submit} aria-label="Provision a machine">
      <ErrorNotice error={action.error} shownFields={FIELDS} title="No machine was provisioned." />
      <TextField
        label="Server type"
        required
        maxLength={40}
        value={instanceType}
        onValue={setInstanceType}
        hint="The compute provider's server type: local-small, local-medium or local-large with the built-in local provider; e.g. cx23 or cax11 on Hetzner Cloud. A type it does not offer is refused with the list of those it does."
        error={violationOf(action.error, 'body.instance_type')}
      />
      <TextField label="Name" maxLength={120} value={name} onValue={setName} hint="Optional, for people." error={violationOf(action.error, 'body.name')} />
      <ExpiryFields choices={MACHINE_EXPIRY_CHOICES} {...expiry.fields} dateLabel="Deletion date" hint="At its expiry the service deletes the machine and its server." error={violationOf(action.error, 'body.expires_at')} />
      <div class="actions">
        <button class="primary" type="submit" disabled={action.busy}>
          Provision machine
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
