// A snippet's page: run it (its inputs as a form, the output as its display_type says), its code,
// details and runs (each linking to its page); edit it, archive and restore it. Writes send the
// etag last read; on a 409 the page reloads the snippet and offers to send the same change again.
import { useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { formatDuration, humanState } from '../../lib/format.ts';
import { displayLabel } from '../../lib/snippet-output.ts';
import { useRecord } from '../../lib/useRecord.ts';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { Code, Fields } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField, useAction } from '../../components/Form.tsx';
import { Conflict, isConflict } from '../../components/Conflict.tsx';
import { ListView } from '../../components/ListView.tsx';
import { SnippetOutput } from '../../components/SnippetOutput.tsx';
import { changesFrom, fieldsOfSnippet, SnippetForm, type Snippet, type SnippetFields } from './SnippetForm.tsx';
import { InputsForm } from './InputsForm.tsx';

type Run = Schemas['SnippetRun'];

export function runHref(run: Pick<Run, 'snippet_id' | 'id'>): string {
  return `/snippets/${run.snippet_id}/runs/${run.id}`;
}

export function SnippetPage(props: { id?: string; path?: string }) {
  const id = props.id!;
  const snippet = useRecord(id, () => ok(client.GET('/v1/snippets/{id}', { params: { path: { id } } })));
  // The fields as they were when editing started: the change is what differs from them.
  const [editBase, setEditBase] = useState<SnippetFields | null>(null);
  const [pending, setPending] = useState<{ kind: 'patch'; changes: Partial<SnippetFields> } | { kind: 'archive' | 'restore' } | null>(null);
  const write = useAction();
  const [runsKey, setRunsKey] = useState(0);

  if (snippet.error) {
    return (
      <Page title="Snippet" breadcrumb={['Snippets', '/snippets']}>
        <ErrorNotice error={snippet.error} title="The snippet could not be loaded." />
      </Page>
    );
  }
  const s = snippet.data;
  if (!s) return <p aria-busy="true">Loading…</p>;

  async function send(what: NonNullable<typeof pending>, current: Snippet) {
    setPending(what);
    const params = { path: { id: current.id }, header: { 'if-match': current.etag } };
    const next = await write.run(() => {
      if (what.kind === 'patch') return ok(client.PATCH('/v1/snippets/{id}', { params, body: what.changes }));
      if (what.kind === 'archive') return ok(client.DELETE('/v1/snippets/{id}', { params }));
      return ok(client.POST('/v1/snippets/{id}:undelete', { params }));
    });
    if (!next) return;
    snippet.set(next);
    setPending(null);
    if (what.kind === 'patch') setEditBase(null);
  }

  function save(fields: SnippetFields) {
    const changes = changesFrom(editBase!, fields);
    if (Object.keys(changes).length === 0) return setEditBase(null);
    void send({ kind: 'patch', changes }, s!);
  }

  const archived = s.archived_at !== null;
  return (
    <Page
      title={s.name}
      subtitle={
        <>
          Snippet · shown as {displayLabel(s.display_type)}
          {archived && (
            <>
              {' '}
              · <StateBadge state="archived" />
            </>
          )}
        </>
      }
      breadcrumb={['Snippets', '/snippets']}
      actions={
        <>
          <button type="button" disabled={archived || editBase !== null} onClick={() => setEditBase(fieldsOfSnippet(s))}>
            Edit
          </button>
          <button type="button" disabled={write.busy || editBase !== null} onClick={() => void send({ kind: archived ? 'restore' : 'archive' }, s)}>
            {archived ? 'Restore' : 'Archive'}
          </button>
        </>
      }
    >
      <Conflict error={write.error} what="The snippet" onReload={snippet.reload} onReapply={() => pending && void send(pending, s)} busy={write.busy} />
      {archived && (
        <p class="notice notice-warn" role="status">
          Archived <Time at={s.archived_at} />: it cannot run or be edited until it is restored. Its runs stay readable.
        </p>
      )}
      {editBase ? (
        <Section title="Edit">
          <SnippetForm initial={editBase} submitLabel="Save changes" busy={write.busy} error={isConflict(write.error) ? undefined : write.error} onSave={save} onCancel={() => setEditBase(null)} />
        </Section>
      ) : (
        <>
          {!isConflict(write.error) && <ErrorNotice error={write.error} />}
          <RunSnippet snippet={s} onRan={() => setRunsKey((k) => k + 1)} />
        </>
      )}
      <Section title="Code">
        <pre class="json" tabIndex={0}>
          {s.code}
        </pre>
      </Section>
      <Section title="Details">
        <Fields
          rows={[
            ['ID', <Code>{s.id}</Code>],
            ['Description', s.description],
            ['Display as', displayLabel(s.display_type)],
            ['Purpose', humanState(s.purpose)],
            ['Visibility', s.visibility === 'workspace' ? 'Workspace' : 'Agent session'],
            ['Written by', humanState(s.origin)],
            ['Inputs', s.inputs.length ? s.inputs.map((i) => `${i.label} (${i.key}, ${i.kind}${i.required ? ', required' : ''})`).join('; ') : null],
            ['Created', <Time at={s.created_at} />],
            ['Updated', <Time at={s.updated_at} />],
            ['Version tag', <Code>{s.etag}</Code>],
          ]}
        />
      </Section>
      <Section title="Runs">
        <RunsOf snippet={s} reloadKey={runsKey} />
      </Section>
    </Page>
  );
}

function RunSnippet(props: { snippet: Snippet; onRan: () => void }) {
  const s = props.snippet;
  const action = useAction();
  const [run, setRun] = useState<Run | null>(null);
  async function start(inputs: Record<string, unknown>) {
    const done = await action.run(() => ok(client.POST('/v1/snippets/{id}/runs', { params: { path: { id: s.id } }, body: { inputs } })));
    if (!done) return;
    setRun(done);
    props.onRan();
  }
  const declared = s.inputs;
  return (
    <Section title="Run">
      <ErrorNotice error={action.error} shownFields={declared.map((d) => `body.inputs.${d.key}`)} title="The snippet did not run." />
      <InputsForm
        label="Run the snippet"
        declarations={declared}
        submitLabel="Run"
        busy={action.busy}
        error={action.error}
        onRun={(inputs) => void start(inputs)}
        disabled={s.archived_at !== null ? 'Archived snippets cannot run; restore it first.' : undefined}
      />
      {run && (
        <div aria-live="polite">
          <h3>
            Output <StateBadge state={run.state} />
          </h3>
          <p class="muted small">
            Took {formatDuration(run.duration_ms)} · <a href={runHref(run)}>Open this run</a>
          </p>
          <SnippetOutput displayType={s.display_type} output={run.output} logs={run.logs} error={run.error} label={`Output of ${s.name}`} />
        </div>
      )}
    </Section>
  );
}

const RUN_STATES: [string, string][] = [
  ['', 'Every state'],
  ['succeeded', 'Succeeded'],
  ['failed', 'Failed'],
  ['timed_out', 'Timed out'],
];

function RunsOf(props: { snippet: Snippet; reloadKey: number }) {
  const [state, setState] = useState('');
  const id = props.snippet.id;
  return (
    <>
      <div class="filters">
        <SelectField label="State" value={state} onValue={setState} options={RUN_STATES} />
      </div>
      <ListView<Run>
        label="Runs"
        deps={[id, state, props.reloadKey]}
        load={(cursor, limit) => ok(client.GET('/v1/snippets/{id}/runs', { params: { path: { id }, query: { cursor, limit, state: (state || undefined) as Run['state'] | undefined } } }))}
        rowKey={(r) => r.id}
        columns={[
          {
            label: 'Started',
            cell: (r) => (
              <a href={runHref(r)}>
                <Time at={r.created_at} />
              </a>
            ),
          },
          { label: 'State', cell: (r) => <StateBadge state={r.state} /> },
          { label: 'Duration', cell: (r) => formatDuration(r.duration_ms) },
          { label: 'Source', cell: (r) => humanState(r.source) },
        ]}
        empty={<p class="muted">No runs yet.</p>}
      />
    </>
  );
}
