// A snippet run's page (/snippets/{id}/runs/{run_id}): its state, when and how long, who ran it
// with which inputs, what it used, and its output as the snippet's display_type says (its error
// and console lines included). Runs never change, so the page loads once.
import { client, ok } from '../../lib/api.ts';
import { formatBytes, formatDuration, humanState } from '../../lib/format.ts';
import { useApi } from '../../lib/useApi.ts';
import { useRecord } from '../../lib/useRecord.ts';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { Code, Fields, type FieldRow } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SnippetOutput } from '../../components/SnippetOutput.tsx';
import { cellText } from '../../lib/snippet-output.ts';

export function RunPage(props: { id?: string; runId?: string; path?: string }) {
  const id = props.id!;
  const runId = props.runId!;
  const run = useRecord(runId, () => ok(client.GET('/v1/snippets/{id}/runs/{run_id}', { params: { path: { id, run_id: runId } } })));
  const snippet = useApi(() => ok(client.GET('/v1/snippets/{id}', { params: { path: { id } } })), [id]);
  const back: [string, string] = [snippet.data?.name ?? 'Snippet', `/snippets/${id}`];

  if (run.error) {
    return (
      <Page title="Snippet run" breadcrumb={back}>
        <ErrorNotice error={run.error} title="The run could not be loaded." />
      </Page>
    );
  }
  const r = run.data;
  const s = snippet.data;
  if (!r || (!s && !snippet.error)) return <p aria-busy="true">Loading…</p>;

  const inputs: FieldRow[] = Object.entries(r.inputs).map(([key, value]) => [s?.inputs.find((i) => i.key === key)?.label ?? key, <Code>{cellText(value)}</Code>]);
  return (
    <Page
      title={s ? `Run of ${s.name}` : 'Snippet run'}
      subtitle={
        <>
          <StateBadge state={r.state} /> · <Time at={r.created_at} /> · took {formatDuration(r.duration_ms)}
        </>
      }
      breadcrumb={back}
    >
      <ErrorNotice error={snippet.error} title="The snippet could not be loaded; the output is shown as JSON." />
      <Section title="Output">
        <SnippetOutput displayType={s?.display_type ?? 'json'} output={r.output} logs={r.logs} error={r.error} label="Output" />
      </Section>
      <Section title="Inputs">{inputs.length ? <Fields rows={inputs} /> : <p class="muted">This run had no inputs.</p>}</Section>
      <Section title="Details">
        <Fields
          rows={[
            ['ID', <Code>{r.id}</Code>],
            ['State', <StateBadge state={r.state} />],
            ['Started', <Time at={r.created_at} />],
            ['Duration', formatDuration(r.duration_ms)],
            ['Source', humanState(r.source)],
            ['Run by', <Code>{r.run_by}</Code>],
            ['Code', s && s.etag !== r.snippet_etag ? `Version tag ${r.snippet_etag} (the snippet changed since)` : `Version tag ${r.snippet_etag} (as it is now)`],
            ['Time limit', r.overrides.timeout_ms !== undefined ? formatDuration(r.overrides.timeout_ms) : undefined],
            ['CPU time', formatDuration(r.stats.cpu_time_ms)],
            ['Memory', formatBytes(r.stats.heap_used_bytes)],
            ['API requests', String(r.stats.request_count)],
          ]}
        />
      </Section>
    </Page>
  );
}
