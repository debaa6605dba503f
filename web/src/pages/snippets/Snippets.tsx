// Snippets (API.md 8.3): the list (filtered by purpose and visibility, archived ones on request, as
// the API offers) and writing a new one. Any member may write and run snippets.
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok } from '../../lib/api.ts';
import { humanState } from '../../lib/format.ts';
import { displayLabel } from '../../lib/snippet-output.ts';
import { ListView } from '../../components/ListView.tsx';
import { Page } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { CheckboxField, SelectField, useAction } from '../../components/Form.tsx';
import { fieldsOfSnippet, SnippetForm, type Snippet, type SnippetFields } from './SnippetForm.tsx';

function listSnippets(query: { cursor?: string; limit: number; purpose?: Snippet['purpose']; visibility?: Snippet['visibility']; archived?: 'true' }) {
  return ok(client.GET('/v1/snippets', { params: { query } }));
}

const PURPOSES: [string, string][] = [['', 'Every purpose'], ...(['general', 'widget', 'reactive_read', 'prepared_action'] as const).map((p): [string, string] => [p, humanState(p)])];
const VISIBILITIES: [string, string][] = [
  ['', 'Workspace and agent sessions'],
  ['workspace', 'Workspace'],
  ['session', 'Agent sessions'],
];

export function SnippetList(_props: { path?: string }) {
  const [purpose, setPurpose] = useState('');
  const [visibility, setVisibility] = useState('');
  const [archived, setArchived] = useState(false);
  return (
    <Page title="Snippets" subtitle="Small programs that read the platform through its API and show the result as a table, a number, JSON or logs." actions={<a class="button primary" href="/snippets/new">New snippet</a>}>
      <div class="filters">
        <SelectField label="Purpose" value={purpose} onValue={setPurpose} options={PURPOSES} />
        <SelectField label="Visibility" value={visibility} onValue={setVisibility} options={VISIBILITIES} />
        <CheckboxField label="Include archived" checked={archived} onValue={setArchived} />
      </div>
      <ListView<Snippet>
        label="Snippets"
        deps={[purpose, visibility, archived]}
        load={(cursor, limit) =>
          listSnippets({
            cursor,
            limit,
            purpose: (purpose || undefined) as Snippet['purpose'] | undefined,
            visibility: (visibility || undefined) as Snippet['visibility'] | undefined,
            archived: archived ? 'true' : undefined,
          })
        }
        rowKey={(s) => s.id}
        columns={[
          {
            label: 'Name',
            cell: (s) => (
              <>
                <a href={`/snippets/${s.id}`}>{s.name}</a>
                {s.archived_at !== null && (
                  <>
                    {' '}
                    <StateBadge state="archived" />
                  </>
                )}
              </>
            ),
          },
          { label: 'Display as', cell: (s) => displayLabel(s.display_type) },
          { label: 'Purpose', cell: (s) => humanState(s.purpose) },
          { label: 'Inputs', cell: (s) => (s.inputs.length ? s.inputs.map((i) => i.label).join(', ') : <span class="muted">None</span>) },
          { label: 'Updated', cell: (s) => <Time at={s.updated_at} /> },
        ]}
        empty={
          purpose || visibility || archived ? (
            <p>No snippet matches these filters.</p>
          ) : (
            <p>
              No snippets yet. <a href="/snippets/new">Write one</a>: a few lines of JavaScript that read the platform and show the result.
            </p>
          )
        }
      />
    </Page>
  );
}

export function NewSnippet(_props: { path?: string }) {
  const action = useAction();
  const { route } = useLocation();
  async function save(fields: SnippetFields) {
    const { description, ...rest } = fields;
    const created = await action.run(() => ok(client.POST('/v1/snippets', { body: { ...rest, ...(description ? { description } : {}) } })));
    if (created) route(`/snippets/${created.snippet_id}`);
  }
  return (
    <Page title="New snippet" breadcrumb={['Snippets', '/snippets']}>
      <SnippetForm initial={fieldsOfSnippet(undefined)} submitLabel="Save snippet" busy={action.busy} error={action.error} onSave={(f) => void save(f)} />
    </Page>
  );
}
