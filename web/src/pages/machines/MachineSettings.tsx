// A machine's name and expiry, changed with PATCH /v1/machines/{id}. The page re-reads the machine
// every few seconds, so the write carries the etag of the machine as it was when the person began
// to edit (not the latest read): a change made meanwhile by someone else (or by an operation) is
// refused with 409, and Conflict shows the current machine and applies the change again on it.
import { useState } from 'preact/hooks';
import { client, ok } from '../../lib/api.ts';
import { expiresAt } from '../../lib/expiry.ts';
import { MACHINE_EXPIRY_CHOICES, type Machine } from '../../lib/machines.ts';
import { formatDate } from '../../lib/format.ts';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { ExpiryFields } from '../../components/ExpiryFields.tsx';
import { TextField, useAction, violationOf } from '../../components/Form.tsx';
import { Conflict, isConflict } from '../../components/Conflict.tsx';

interface Draft {
  /** the etag when the person began to edit */
  base: string;
  name?: string;
  expiry?: string;
  date?: string;
}

export function MachineSettings(props: { machine: Machine; reload: () => Promise<void>; onSaved: (m: Machine) => void }) {
  const m = props.machine;
  const [draft, setDraft] = useState<Draft | null>(null);
  const [dateError, setDateError] = useState<string | undefined>(undefined);
  const action = useAction();
  const edit = (change: Omit<Draft, 'base'>) => setDraft({ base: draft?.base ?? m.etag, ...draft, ...change });

  async function save(etag: string) {
    if (!draft) return;
    const body: { name?: string | null; expires_at?: number | null } = {};
    if (draft.name !== undefined) body.name = draft.name.trim() || null;
    if (draft.expiry !== undefined && draft.expiry !== 'keep') {
      const at = expiresAt(draft.expiry, draft.date ?? '', Date.now());
      setDateError(at.ok ? undefined : at.error);
      if (!at.ok) return;
      body.expires_at = at.value ?? null;
    }
    const saved = await action.run(() => ok(client.PATCH('/v1/machines/{id}', { params: { path: { id: m.id }, header: { 'if-match': etag } }, body })));
    if (!saved) return;
    setDraft(null);
    props.onSaved(saved);
  }

  const keep: [string, string] = ['keep', m.expires_at === null ? 'Unchanged: never' : `Unchanged: ${formatDate(m.expires_at)}`];
  return (
    <form
      class="form"
      onSubmit={(e) => {
        e.preventDefault();
        void save(draft?.base ?? m.etag);
      }}
    >
      <Conflict error={action.error} what="The machine" onReload={() => props.reload()} onReapply={() => void save(m.etag)} busy={action.busy} />
      {!isConflict(action.error) && <ErrorNotice error={action.error} shownFields={['body.name', 'body.expires_at']} title="The machine was not changed." />}
      <TextField label="Name" maxLength={120} value={draft?.name ?? m.name ?? ''} onValue={(name) => edit({ name })} hint="For people; empty clears it (the node's name is shown then)." error={violationOf(action.error, 'body.name')} />
      <ExpiryFields
        choices={[keep, ...MACHINE_EXPIRY_CHOICES]}
        choice={draft?.expiry ?? 'keep'}
        onChoice={(v) => edit({ expiry: v })}
        date={draft?.date ?? ''}
        onDate={(date) => edit({ date })}
        dateLabel="Deletion date"
        hint="At its expiry the service deletes the machine; owners and admins are notified 72 h and 24 h before."
        dateError={dateError}
        error={violationOf(action.error, 'body.expires_at')}
      />
      <button type="submit" class="primary" disabled={action.busy || !draft}>
        Save changes
      </button>
    </form>
  );
}
