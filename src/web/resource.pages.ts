// The `html_url` of operations, clusters, installs, secrets and snippets (`/operations/{id}`,
// `/clusters/{id}`, ...): until a dashboard exists, a minimal server-rendered page of the resource for a
// browser signed in with the /device cookie, so the links the API hands out are never dead.
// A signed-out browser is redirected to the sign-in, which comes back here. The resource is read
// through the same service functions as the JSON API, as the signed-in user in the resource's
// workspace: a user who is not a member of it gets the same 404 page as for an unknown id.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Executor } from '../db/database.js';
import type { UserPrincipal } from '../platform/auth.js';
import { ApiError } from '../platform/errors.js';
import type { App } from '../platform/http.js';
import type { Services } from '../services.js';
import { findUserById } from '../modules/users/users.repo.js';
import { createCookieSessions } from './cookie.session.js';
import { html, sendPage, type Html } from './layout.js';

const KINDS = {
  operations: { prefix: 'op_', table: 'operations', noun: 'Operation' },
  clusters: { prefix: 'clu_', table: 'clusters', noun: 'Cluster' },
  installs: { prefix: 'inst_', table: 'installs', noun: 'Install' },
  // Metadata only, as GET /v1/secrets/{id}: a value is never on a page.
  secrets: { prefix: 'sec_', table: 'secrets', noun: 'Secret' },
  snippets: { prefix: 'snp_', table: 'snippets', noun: 'Snippet' },
} as const;
type Kind = keyof typeof KINDS;

const PAGE_PATH = /^\/(operations|clusters|installs|secrets|snippets)\/(op|clu|inst|sec|snp)_[0-9a-z]{26}$/;

/** `next` after sign-in: a resource page path exactly (`/clusters/clu_...`), else undefined. */
export function resourcePagePath(value: string | undefined): string | undefined {
  const m = value ? PAGE_PATH.exec(value) : null;
  return m && KINDS[m[1] as Kind].prefix === `${m[2]}_` ? value : undefined;
}

/** The workspace a resource belongs to, or null (unknown id, or an operation of no workspace). */
async function workspaceOf(db: Executor, kind: Kind, id: string): Promise<string | null> {
  const row = await db.selectFrom(KINDS[kind].table).select('workspace_id').where('id', '=', id).executeTakeFirst();
  return row?.workspace_id ?? null;
}

const PAGE_LINK: Record<string, Kind> = { op_: 'operations', clu_: 'clusters', inst_: 'installs', sec_: 'secrets', snp_: 'snippets' };

/** A value as a cell: ids of resources that have a page link to it, objects as indented JSON. */
function cell(basePath: string, key: string, value: unknown): Html {
  if (value === null || value === undefined) return html`<span class="muted">none</span>`;
  if (typeof value === 'object') return html`<pre><code>${JSON.stringify(value, null, 2)}</code></pre>`;
  const text = String(value);
  if (key === 'html_url') return html`<a href="${text}">${text}</a>`;
  const target = key.endsWith('id') ? Object.entries(PAGE_LINK).find(([prefix]) => text.startsWith(prefix))?.[1] : undefined;
  if (target && resourcePagePath(`/${target}/${text}`)) return html`<a href="${basePath}/${target}/${text}">${text}</a>`;
  if (key.endsWith('_at') && typeof value === 'number') return html`${text} <span class="muted">(${new Date(value * 1000).toISOString()})</span>`;
  return html`${text}`;
}

function recordTable(basePath: string, resource: Record<string, unknown>, skip: string[] = []): Html {
  const rows = Object.entries(resource).filter(([k]) => !skip.includes(k));
  return html`<table><tbody>${rows.map(([k, v]) => html`<tr><th scope="row">${k}</th><td>${cell(basePath, k, v)}</td></tr>`)}</tbody></table>`;
}

function stepsTable(steps: Array<Record<string, unknown>>): Html {
  return html`<h2>Steps</h2><table><thead><tr><th>step</th><th>status</th><th>attempts</th><th>error</th></tr></thead><tbody>${steps.map(
    (st) => html`<tr><td>${String(st.name)}</td><td>${String(st.status)}</td><td>${String(st.attempts)}</td><td>${(st.error_message as string | undefined) ?? ''}</td></tr>`,
  )}</tbody></table>`;
}

function resourceView(basePath: string, kind: Kind, resource: Record<string, unknown>, email: string): Html {
  const noun = KINDS[kind].noun;
  const headline = kind === 'operations'
    ? `${noun} ${String((resource.metadata as { type?: unknown }).type)}: ${String(resource.state)}`
    : `${noun} ${String(resource.name ?? resource.id)}${resource.state ? `: ${String(resource.state)}` : ''}`;
  const steps = kind === 'operations' && Array.isArray(resource.steps) ? stepsTable(resource.steps as Array<Record<string, unknown>>) : html``;
  return html`<h1>${headline}</h1>
<p class="muted">Signed in as <strong>${email}</strong>. The same resource as <code>GET /v1/${kind}/${String(resource.id)}</code> with
<code>svc-context: ${String(resource.workspace_id)}</code>.</p>
${recordTable(basePath, resource, ['steps'])}
${steps}`;
}

export function resourcePageRoutes(app: App, s: Services): void {
  const cookies = createCookieSessions({ config: s.config, sessions: s.sessions });
  const { basePath } = cookies;
  const load: Record<Kind, (scope: { workspaceId: string; role: 'owner' | 'admin' | 'member'; actorId: string }, id: string) => Promise<object>> = {
    operations: (scope, id) => s.operations.get(scope, id),
    clusters: (scope, id) => s.clusters.getCluster(scope, id),
    installs: (scope, id) => s.installs.getInstall(scope, id),
    secrets: (scope, id) => s.secrets.getSecret(scope, id),
    snippets: (scope, id) => s.snippets.getSnippet(scope, id),
  };

  function notFound(reply: FastifyReply, kind: Kind, email: string) {
    return sendPage(reply, 404, 'Not found', html`<h1>Not found</h1>
<p class="muted">Signed in as <strong>${email}</strong>.</p>
<p>There is no ${KINDS[kind].noun.toLowerCase()} with this id in a workspace you belong to.</p>`);
  }

  for (const kind of Object.keys(KINDS) as Kind[]) {
    app.get(`/${kind}/:id`, {
      config: { auth: 'none' },
      attachValidation: true,
      schema: { hide: true, params: Type.Object({ id: Type.String({ maxLength: 64 }) }) },
    }, async (request: FastifyRequest<{ Params: { id: string } }>, reply) => {
      const id = request.validationError ? '' : request.params.id;
      const user: UserPrincipal | null = await cookies.cookieUser(request);
      if (!user) {
        const next = resourcePagePath(`/${kind}/${id}`);
        const target = `${basePath}/device${next ? `?next=${encodeURIComponent(next)}` : ''}`;
        return reply.code(303).header('location', target).header('cache-control', 'no-store').send();
      }
      const email = (await findUserById(s.db, user.userId))?.email ?? user.userId;
      if (!resourcePagePath(`/${kind}/${id}`)) return notFound(reply, kind, email);
      const workspaceId = await workspaceOf(s.db, kind, id);
      const role = workspaceId ? await s.workspaces.memberships.roleOf(workspaceId, user.userId) : null;
      if (!workspaceId || !role) return notFound(reply, kind, email);
      let resource: object;
      try {
        resource = await load[kind]({ workspaceId, role, actorId: user.userId }, id);
      } catch (err) {
        if (err instanceof ApiError && err.code === 'NOT_FOUND') return notFound(reply, kind, email);
        throw err;
      }
      const record = resource as Record<string, unknown>;
      return sendPage(reply, 200, `${KINDS[kind].noun} ${id}`, resourceView(basePath, kind, record, email), true);
    });
  }
}
