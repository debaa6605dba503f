// The frame of every page: its title (also the document's), the actions beside it, and focus moved
// to the heading when the app moves to another page, so keyboard and screen reader users land on
// the new page. The first page of a load keeps the browser's start (the skip link comes first).
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

let firstPage = true;

export function Page(props: { title: string; subtitle?: ComponentChildren; actions?: ComponentChildren; children: ComponentChildren; breadcrumb?: [label: string, href: string] }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${props.title} · svc`;
  }, [props.title]);
  useEffect(() => {
    if (firstPage) firstPage = false;
    else heading.current?.focus({ preventScroll: true });
  }, []);
  return (
    <>
      {props.breadcrumb && (
        <p class="breadcrumb">
          <a href={props.breadcrumb[1]}>← {props.breadcrumb[0]}</a>
        </p>
      )}
      <div class="page-head">
        <div>
          <h1 ref={heading} tabIndex={-1}>
            {props.title}
          </h1>
          {props.subtitle && <p class="muted">{props.subtitle}</p>}
        </div>
        {props.actions && <div class="actions">{props.actions}</div>}
      </div>
      {props.children}
    </>
  );
}

/** A titled block of a record page (its related records, an action's form). */
export function Section(props: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  const id = `section-${props.title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <section class="card" aria-labelledby={id}>
      <div class="section-head">
        <h2 id={id}>{props.title}</h2>
        {props.actions}
      </div>
      {props.children}
    </section>
  );
}
