// A secret's versions on its page: the list (state, created), adding one, and per version reveal
// (after a confirmation that says the read is audited), disable, enable and destroy (after a
// confirmation: it cannot be undone). A revealed value lives in this component's state only: Hide
// drops it, as does leaving the page (the component unmounts) or any change to a version.
import { useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { Section } from '../../components/Page.tsx';
import { ListView } from '../../components/ListView.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField, TextField, useAction, violationOf } from '../../components/Form.tsx';
import { Confirm } from '../../components/Confirm.tsx';
import { Conflict, isConflict } from '../../components/Conflict.tsx';
import { CopyValue } from '../../components/CopyValue.tsx';
import { SecretValueField } from '../../components/SecretValueField.tsx';
import type { Secret } from './Secrets.tsx';

type Version = Schemas['SecretVersion'];
type VersionAction = 'disable' | 'enable' | 'destroy';

function callVersion(what: VersionAction, v: Version) {
  const params = { path: { id: v.secret_id, vid: v.id }, header: { 'if-match': v.etag } };
  if (what === 'disable') return ok(client.POST('/v1/secrets/{id}/versions/{vid}:disable', { params }));
  if (what === 'enable') return ok(client.POST('/v1/secrets/{id}/versions/{vid}:enable', { params }));
  return ok(client.POST('/v1/secrets/{id}/versions/{vid}:destroy', { params }));
}

const STATES: [string, string][] = [
  ['', 'Every state'],
  ['enabled', 'Enabled'],
  ['disabled', 'Disabled'],
  ['destroyed', 'Destroyed'],
];

export function SecretVersions(props: { secret: Secret; admin: boolean; onChanged: () => unknown }) {
  const s = props.secret;
  const [state, setState] = useState('');
  const [reloadKey, setReloadKey] = useState(0);
  const action = useAction();
  const [last, setLast] = useState<{ what: VersionAction; version: Version } | null>(null);
  const [confirm, setConfirm] = useState<{ what: 'destroy' | 'reveal'; version: Version } | null>(null);
  const [revealed, setRevealed] = useState<{ number: number; value: string } | null>(null);
  const [done, setDone] = useState('');
  const writable = props.admin && s.state === 'active';

  function changed(message: string) {
    setDone(message);
    setReloadKey((k) => k + 1);
    props.onChanged();
  }

  async function act(what: VersionAction, version: Version) {
    setConfirm(null);
    setLast({ what, version });
    setRevealed(null);
    const next = await action.run(() => callVersion(what, version));
    if (next) changed(`Version ${next.version_number} is ${next.state}.`);
  }

  // After a 409 the change is applied again to the version as it is now (its current etag).
  async function reapply() {
    if (!last) return;
    const current = await action.run(() => ok(client.GET('/v1/secrets/{id}/versions/{vid}', { params: { path: { id: s.id, vid: last.version.id } } })));
    if (current) await act(last.what, current);
  }

  async function reveal(version: Version) {
    setConfirm(null);
    const got = await action.run(() => ok(client.POST('/v1/secrets/{id}/versions/{vid}:access', { params: { path: { id: s.id, vid: version.id } } })));
    if (got) setRevealed({ number: got.version_number, value: got.value });
  }

  const n = confirm?.version.version_number;
  return (
    <>
      <Section title="Versions" actions={<SelectField label="Show" value={state} onValue={setState} options={STATES} />}>
        <p class="visually-hidden" role="status">
          {done}
        </p>
        <Conflict error={action.error} what="The version" onReload={() => setReloadKey((k) => k + 1)} onReapply={() => void reapply()} busy={action.busy} />
        {!isConflict(action.error) && <ErrorNotice error={action.error} />}
        {revealed && (
          <CopyValue label={`Value of version ${revealed.number}`} value={revealed.value} onHide={() => setRevealed(null)}>
            <p>This read is recorded in the audit log. Hide the value when you are done: the page then forgets it.</p>
          </CopyValue>
        )}
        <ListView<Version>
          label="Versions"
          deps={[s.id, state, reloadKey]}
          load={(cursor, limit) => ok(client.GET('/v1/secrets/{id}/versions', { params: { path: { id: s.id }, query: { cursor, limit, state: (state || undefined) as Version['state'] | undefined } } }))}
          rowKey={(v) => v.id}
          columns={[
            {
              label: 'Version',
              cell: (v) => (
                <>
                  Version {v.version_number}
                  {v.comment && <span class="muted small"> · {v.comment}</span>}
                </>
              ),
            },
            { label: 'State', cell: (v) => <StateBadge state={v.state} /> },
            { label: 'Created', cell: (v) => <Time at={v.created_at} /> },
            {
              label: 'Actions',
              cell: (v) =>
                v.state === 'destroyed' ? (
                  <span class="muted">
                    Destroyed <Time at={v.destroyed_at} />
                  </span>
                ) : (
                  <span class="actions">
                    {v.state === 'enabled' && (
                      <button type="button" aria-label={`Reveal version ${v.version_number}`} disabled={!writable || action.busy} onClick={() => setConfirm({ what: 'reveal', version: v })}>
                        Reveal
                      </button>
                    )}
                    {v.state === 'enabled' ? (
                      <button type="button" aria-label={`Disable version ${v.version_number}`} disabled={!writable || action.busy} onClick={() => void act('disable', v)}>
                        Disable
                      </button>
                    ) : (
                      <button type="button" aria-label={`Enable version ${v.version_number}`} disabled={!writable || action.busy} onClick={() => void act('enable', v)}>
                        Enable
                      </button>
                    )}
                    <button type="button" class="danger" aria-label={`Destroy version ${v.version_number}`} disabled={!props.admin || action.busy} onClick={() => setConfirm({ what: 'destroy', version: v })}>
                      Destroy
                    </button>
                  </span>
                ),
            },
          ]}
          empty={<p class="muted">No version in this state.</p>}
        />
      </Section>
      {writable && <AddVersion secret={s} onAdded={(v) => changed(`Version ${v.version_number} added.`)} />}
      <Confirm
        open={confirm?.what === 'reveal'}
        title={`Reveal the value of version ${n}?`}
        confirmLabel="Reveal value"
        onConfirm={() => confirm && void reveal(confirm.version)}
        onCancel={() => setConfirm(null)}
      >
        <p>Reading a secret value is audited: the workspace's audit log records that you read version {n} of {s.name}, and when.</p>
      </Confirm>
      <Confirm open={confirm?.what === 'destroy'} title={`Destroy version ${n}?`} confirmLabel="Destroy version" danger onConfirm={() => confirm && void act('destroy', confirm.version)} onCancel={() => setConfirm(null)}>
        <p>Its value is erased for good (the encrypted data and its key). This cannot be undone.</p>
      </Confirm>
    </>
  );
}

function AddVersion(props: { secret: Secret; onAdded: (v: Version) => void }) {
  const [value, setValue] = useState('');
  const [comment, setComment] = useState('');
  const action = useAction();

  async function submit(e: Event) {
    e.preventDefault();
    const body = { value, ...(comment ? { comment } : {}) };
    const added = await action.run(() => ok(client.POST('/v1/secrets/{id}/versions', { params: { path: { id: props.secret.id } }, body })));
    if (!added) return;
    setValue('');
    setComment('');
    props.onAdded(added);
  }

  return (
    <Section title="Add a version">
      <form class="form" onSubmit={submit} autoComplete="off">
        <ErrorNotice error={action.error} shownFields={['body.value', 'body.comment']} title="The version was not added." />
        <SecretValueField label="New value" required value={value} onValue={setValue} hint="Becomes the next version, enabled; the others stay as they are." error={violationOf(action.error, 'body.value')} />
        <TextField label="Comment" maxLength={200} value={comment} onValue={setComment} hint="Optional, e.g. why the value changed." error={violationOf(action.error, 'body.comment')} />
        <button class="primary" type="submit" disabled={action.busy}>
          Add version
        </button>
      </form>
    </Section>
  );
}
