// A record's fields as a description list under human labels. Rows whose value is undefined are
// left out, so optional fields need no conditionals at the call site.
import type { ComponentChildren } from 'preact';

export type FieldRow = [label: string, value: ComponentChildren | undefined];

export function Fields(props: { rows: FieldRow[] }) {
  return (
    <dl class="fields">
      {props.rows
        .filter(([, v]) => v !== undefined)
        .map(([label, value]) => (
          <div key={label}>
            <dt>{label}</dt>
            <dd>{value === null || value === '' ? <span class="muted">—</span> : value}</dd>
          </div>
        ))}
    </dl>
  );
}

/** A value in monospace that is easy to select (ids, names, hashes). */
export function Code(props: { children: ComponentChildren }) {
  return <code class="code">{props.children}</code>;
}
