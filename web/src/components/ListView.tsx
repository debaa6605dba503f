// A list page's table over the API's keyset cursors (API.md section 3): a page at a time, newest
// first, "Older" follows next_cursor and "Newer" goes back through the cursors already seen. When
// the filters change (deps), paging starts over. On a narrow screen each row becomes a card.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { Page } from '../lib/api.ts';
import { useApi } from '../lib/useApi.ts';
import { ErrorNotice } from './ErrorNotice.tsx';

export interface Column<T> {
  label: string;
  cell: (item: T) => ComponentChildren;
}

export const PAGE_SIZE = 25;

export function ListView<T>(props: {
  label: string;
  load: (cursor: string | undefined, limit: number) => Promise<Page<T>>;
  columns: Column<T>[];
  rowKey: (item: T) => string;
  deps?: unknown[];
  empty: ComponentChildren;
}) {
  // cursors[i] is the cursor that loads page i (undefined for the first page).
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const deps = props.deps ?? [];
  useEffect(() => setCursors([undefined]), deps);
  const at = cursors.length - 1;
  const page = useApi(() => props.load(cursors[at], PAGE_SIZE), [at, cursors[at], ...deps]);

  if (page.error) return <ErrorNotice error={page.error} title="The list could not be loaded." />;
  if (!page.data) return <p class="muted" aria-busy="true">Loading…</p>;
  const items = page.data.data;
  return (
    <div class="list" aria-busy={page.loading}>
      {items.length === 0 && at === 0 ? (
        <div class="empty">{props.empty}</div>
      ) : (
        <table class="table">
          <caption class="visually-hidden">{props.label}</caption>
          <thead>
            <tr>
              {props.columns.map((c) => (
                <th scope="col" key={c.label}>
                  {c.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <tr key={props.rowKey(item)}>
                {props.columns.map((c) => (
                  <td key={c.label} data-label={c.label}>
                    {c.cell(item)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {(at > 0 || page.data.has_more) && (
        <nav class="pager" aria-label={`${props.label} pages`}>
          <button type="button" disabled={at === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
            ← Newer
          </button>
          <span class="muted">Page {at + 1}</span>
          <button type="button" disabled={!page.data.has_more} onClick={() => setCursors([...cursors, page.data!.next_cursor ?? undefined])}>
            Older →
          </button>
        </nav>
      )}
    </div>
  );
}
