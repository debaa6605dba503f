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

/**
 * The second step of a sign-in through the provider, for an account with two factors: the code,
 * posted with the CSRF token; the pending sign-in itself travels in its own cookie.
 */
export function secondFactorView(p: { basePath: string; action: string; csrf: string; email: string; restartHref: string; message?: string | undefined }): Html {
  return html`<h1>Two-factor sign-in</h1>
${p.message ? html`<p class="msg error" role="alert">${p.message}</p>` : html``}
<p>You signed in as <strong>${p.email}</strong> at the sign-in provider. Your account also asks for a second factor: enter the 6-digit code from your authenticator app, or one of your recovery codes.</p>
<form method="post" action="${p.action}">
<input type="hidden" name="csrf" value="${p.csrf}">
<label for="code">Authentication code</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" autocapitalize="off" spellcheck="false" required maxlength="32" autofocus>
<button type="submit" class="primary">Verify</button>
</form>
<p class="muted"><a href="${p.restartHref}">Start again</a></p>`;
}
