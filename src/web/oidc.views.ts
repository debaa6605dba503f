// Views of single sign-on (issue 34): the "Sign in with {name}" link of the server-rendered sign-in
// form, and the page a browser sees when a sign-in through the provider does not end signed in.
// Every value goes through `html`, which escapes it.
import { html, type Html } from './layout.js';

export interface SsoLink {
  /** the operator's SVC_OIDC_NAME */
  name: string;
  href: string;
}

export function ssoLinkBlock(sso: SsoLink | undefined): Html {
  if (!sso) return html``;
  return html`<p class="muted">or</p>
<p><a class="sso" href="${sso.href}">Sign in with ${sso.name}</a></p>`;
}

/** `{basePath}/v1/auth/oidc/start?next=...`: the link that starts a sign-in returning to `next`. */
export function ssoStartHref(basePath: string, next: string): string {
  return `${basePath}/v1/auth/oidc/start?next=${encodeURIComponent(next)}`;
}

export function ssoProblemView(p: { message: string; retryHref: string; backHref: string }): Html {
  return html`<h1>Could not sign you in</h1>
<p class="msg error" role="alert">${p.message}</p>
<p><a href="${p.retryHref}">Try again</a> · <a href="${p.backHref}">Back to the sign-in page</a></p>`;
}
