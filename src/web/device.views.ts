// Views of the /device approval pages (RFC 8628 section 3.3). Every value goes through `html`,
// which escapes it; no view takes raw markup from a caller.
import { html, type Html } from './layout.js';
import { ssoLinkBlock, type SsoLink } from './oidc.views.js';

export interface Message {
  kind: 'error' | 'ok';
  text: string;
}

export function messageBlock(message: Message | undefined): Html {
  if (!message) return html``;
  // role=alert makes screen readers announce errors at once; status is polite.
  return message.kind === 'error'
    ? html`<p class="msg error" role="alert">${message.text}</p>`
    : html`<p class="msg ok" role="status">${message.text}</p>`;
}

function signedInBar(p: { basePath: string; email: string; csrf: string }): Html {
  return html`<div class="muted">Signed in as <strong>${p.email}</strong>.
<form class="inline" method="post" action="${p.basePath}/device/sign-out">
<input type="hidden" name="csrf" value="${p.csrf}">
<button type="submit" class="secondary">Sign out</button>
</form></div>`;
}

export function signInView(p: {
  basePath: string; csrf: string; userCode?: string | undefined; email?: string | undefined; next?: string | undefined; message?: Message;
  /** the operator's OpenID provider, when single sign-on is set up */
  sso?: SsoLink | undefined;
}): Html {
  return html`<h1>${p.next ? 'Sign in' : 'Sign in to connect a device'}</h1>
${messageBlock(p.message)}
<p>${p.next ? 'Sign in to see this page.' : 'Sign in to approve the code shown in your terminal.'}</p>
<form method="post" action="${p.basePath}/device/sign-in">
<input type="hidden" name="csrf" value="${p.csrf}">
${p.userCode ? html`<input type="hidden" name="user_code" value="${p.userCode}">` : html``}
${p.next ? html`<input type="hidden" name="next" value="${p.next}">` : html``}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${p.email ?? ''}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="256">
<button type="submit" class="primary">Sign in</button>
</form>
${ssoLinkBlock(p.sso)}`;
}

export function enterCodeView(p: { basePath: string; email: string; csrf: string; userCode?: string | undefined; message?: Message }): Html {
  return html`<h1>Connect a device</h1>
${signedInBar(p)}
${messageBlock(p.message)}
<form method="get" action="${p.basePath}/device">
<label for="user_code">Enter the code shown in your terminal</label>
<input id="user_code" name="user_code" type="text" autocomplete="off" autocapitalize="characters" spellcheck="false"
 required maxlength="64" placeholder="XXXX-XXXX" value="${p.userCode ?? ''}">
<button type="submit" class="primary">Continue</button>
</form>`;
}

export function confirmView(p: { basePath: string; email: string; csrf: string; userCode: string; clientId: string; minutesLeft: number }): Html {
  return html`<h1>Approve this device?</h1>
${signedInBar(p)}
<p><strong>${p.clientId}</strong> is asking for access to your account. Check that this code matches the one in your terminal:</p>
<p class="code" aria-label="code ${p.userCode.split('').join(' ')}">${p.userCode}</p>
<p class="muted">Approve only if you started this sign-in yourself. Approving gives the device full access to your account
(every workspace you belong to). The code expires in about ${p.minutesLeft} minute${p.minutesLeft === 1 ? '' : 's'}.</p>
<form class="inline" method="post" action="${p.basePath}/device/approve">
<input type="hidden" name="csrf" value="${p.csrf}">
<input type="hidden" name="user_code" value="${p.userCode}">
<button type="submit" class="primary">Approve</button>
</form>
<form class="inline" method="post" action="${p.basePath}/device/deny">
<input type="hidden" name="csrf" value="${p.csrf}">
<input type="hidden" name="user_code" value="${p.userCode}">
<button type="submit" class="secondary">Deny</button>
</form>`;
}

export function resultView(p: { basePath: string; email: string; csrf: string; title: string; message: Message }): Html {
  return html`<h1>${p.title}</h1>
${signedInBar(p)}
${messageBlock(p.message)}
<p><a href="${p.basePath}/device">Connect another device</a></p>`;
}

/** The second step of a sign-in with two factors: the code, with the ticket that stands for the password just checked. */
export function codeView(p: { basePath: string; csrf: string; ticket: string; userCode?: string | undefined; next?: string | undefined; message?: Message }): Html {
  return html`<h1>Two-factor sign-in</h1>
${messageBlock(p.message)}
<p>Your account asks for a second factor. Enter the 6-digit code from your authenticator app, or one of your recovery codes.</p>
<form method="post" action="${p.basePath}/device/sign-in">
<input type="hidden" name="csrf" value="${p.csrf}">
<input type="hidden" name="ticket" value="${p.ticket}">
${p.userCode ? html`<input type="hidden" name="user_code" value="${p.userCode}">` : html``}
${p.next ? html`<input type="hidden" name="next" value="${p.next}">` : html``}
<label for="code">Authentication code</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" autocapitalize="off" spellcheck="false" required maxlength="32" autofocus>
<button type="submit" class="primary">Verify</button>
</form>
<p class="muted"><a href="${p.basePath}/device">Start again</a></p>`;
}
