// The HTML shell of server-rendered pages: escaping, one layout, and the headers every page sends.
// Pages are self-contained (inline CSS, no scripts, no external assets), so the CSP can forbid
// everything else, and they may never be framed (a framed Approve button is the classic
// click-jacking attack on device approval).
import type { FastifyReply } from 'fastify';

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML element content and quoted attribute values alike. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** A fragment of already-escaped HTML; only `html` and the view functions produce one. */
export interface Html {
  readonly __html: string;
}

export function raw(markup: string): Html {
  return { __html: markup };
}

/** Tagged template that escapes every interpolated value unless it is already `Html` (or a list of it). */
export function html(strings: TemplateStringsArray, ...values: Array<string | number | Html | Html[] | null | undefined>): Html {
  let out = strings[0]!;
  values.forEach((value, i) => {
    if (Array.isArray(value)) out += value.map((v) => v.__html).join('');
    else if (typeof value === 'object' && value !== null) out += value.__html;
    else if (value !== null && value !== undefined) out += escapeHtml(String(value));
    out += strings[i + 1]!;
  });
  return raw(out);
}

const STYLE = `
:root { color-scheme: light dark; --accent: #2557d6; --err: #b3261e; --ok: #1e7a34; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; padding: 2rem 1rem; }
main { max-width: 26rem; margin: 0 auto; }
h1 { font-size: 1.4rem; margin: 0 0 1rem; }
label { display: block; margin: .75rem 0 .25rem; font-weight: 600; }
input { width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; border: 1px solid #888; border-radius: 4px; }
button { font: inherit; padding: .5rem 1.1rem; margin: 1rem .5rem 0 0; border-radius: 4px; border: 1px solid var(--accent); cursor: pointer; }
button.primary { background: var(--accent); color: #fff; }
button.secondary { background: transparent; color: inherit; border-color: #888; }
.code { font: 700 2rem/1.2 ui-monospace, "SFMono-Regular", Menlo, monospace; letter-spacing: .15em; margin: .5rem 0 1rem; }
.price { font-size: 1.6rem; font-weight: 700; margin: .25rem 0 1rem; }
.msg { padding: .6rem .8rem; border-radius: 4px; border-left: 4px solid; margin: 0 0 1rem; }
.error { border-color: var(--err); }
.ok { border-color: var(--ok); }
.muted { opacity: .75; font-size: .9rem; }
form.inline { display: inline; }
`;

export function layout(title: string, body: Html): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} · svc</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body.__html}
</main>
</body>
</html>
`;
}

/** Sends a page with the headers every server-rendered page needs. */
export function sendPage(reply: FastifyReply, status: number, title: string, body: Html): FastifyReply {
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .send(layout(title, body));
}
