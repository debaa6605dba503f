// Options of @fastify/swagger: the document's header (info, servers, tags, security scheme) and the
// per-route transform that derives each operation's `security` from the route's `config.auth`,
// so the document cannot drift from what the auth hook enforces.
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifySchema } from 'fastify';
import { bearerSecurity, errorResponse } from '../../platform/http.js';
import type { Config } from '../../config.js';
import { OPERATION_DOCUMENT_SCHEMAS } from '../operations/operations.schemas.js';

/** Every tag an operation may use, with its description (the lint requires both). */
export const OPENAPI_TAGS = [
  { name: 'system', description: 'Health probes, Prometheus metrics and this document. No credentials.' },
  { name: 'identity', description: 'Users and session tokens: sign in, log out, the signed-in user, passwords and their reset links.' },
  { name: 'users', description: 'The accounts of this service, for its instance admins: disable, enable, delete, the admin role, password reset links (on the host, `svc admin users` does the same).' },
  { name: 'mail', description: 'The mail outbox, for instance admins: what the service e-mailed (on the host, `svc admin mail list`).' },
  { name: 'lookup', description: 'Which workspace an id belongs to, and its page in the web app: for links to a record of another workspace.' },
  { name: 'workspaces', description: 'Workspaces (the unit of tenancy) and their members.' },
  { name: 'api tokens', description: 'Workspace API tokens (`sk_svc_...`) for CI and scripts.' },
  { name: 'oauth', description: 'The OAuth 2.0 authorization server: token endpoint, device authorization grant, signing keys.' },
  { name: 'oauth clients', description: 'OAuth clients of a workspace for the client-credentials grant (JWT access tokens).' },
  { name: 'operations', description: 'Long-running operations: read their steps, wait for the end without polling, cancel.' },
  { name: 'clusters', description: 'Clusters of a workspace (a simulated local one, or a Kubernetes cluster by kubeconfig) and their capabilities.' },
  { name: 'machines', description: 'Servers that work as nodes of a cluster: brought by their owner through a worker bootstrap, or provisioned through the compute provider; each runs the machine agent.' },
  { name: 'agents', description: 'Assistants of the workspace: instructions, a model and a tool policy. Admins manage them; members talk to them in sessions.' },
  { name: 'agent sessions', description: 'A person\'s conversations with an agent; each is its creator\'s (owners and admins may read it).' },
  { name: 'agent turns', description: 'Messages to an agent and the work it does to answer, through the sandbox and as the person: admission, tools, approvals, questions, cancel and wait.' },
  { name: 'approval requests', description: 'Turns paused until a person approves or rejects code that writes, or a member\'s turn on an agent that writes without asking.' },
  { name: 'agent events', description: 'Every step of every turn, numbered per session: a page of them, or a Server-Sent Events stream that resumes from any of them.' },
  { name: 'machine agent', description: 'The two calls of the machine agent (`svc machine join`): trade a bootstrap token for a machine credential, then heartbeat with it. Not for people: the CLI runs them as `svc machine join`.' },
  { name: 'packages', description: 'Packages and their immutable versions: semver, a JSON Schema of the install values, and a manifest of routes and Kubernetes objects.' },
  { name: 'installs', description: 'Installs of package versions on clusters, their renders and their reachable URLs.' },
  { name: 'offers', description: 'A seller\'s priced, configurable offers to install a package for a customer, and the link (`/i/{short_hash}`) that redeems one: make, change until used, archive and restore; `:resolve` shows a link\'s public face without a credential.' },
  { name: 'preview hostnames', description: 'Hostnames under the preview domain bound to a render of an install: floating (follow a track) or pinned (one render).' },
  { name: 'secrets', description: 'Secrets of a workspace: encrypted values with metadata, soft delete and restore. Members read metadata; admins and owners write.' },
  { name: 'secret versions', description: 'The versioned values of a secret: add, disable, enable, destroy (crypto-shredding), and read a value with `:access` (admins and owners, audited).' },
  { name: 'audit events', description: 'The audit log of a workspace: changes to secrets, every read of a secret value, credential and member changes, workspace deletion.' },
  { name: 'plans', description: 'The plan catalog: each tier\'s quota limits (built in, or the operator\'s SVC_PLANS_FILE).' },
  { name: 'subscriptions', description: 'A workspace\'s subscription: its tier, upgrades at once, downgrades and cancellation at the period end, and their change requests.' },
  { name: 'quotas', description: 'Quota limits and usage per metric; creates past a limit are refused with 429 RESOURCE_EXHAUSTED.' },
  { name: 'snippets', description: 'Stored JavaScript run in a WebAssembly sandbox as whoever runs it, with typed inputs and the history of runs.' },
  { name: 'order drafts', description: 'A customer\'s purchase of an offer, phase by phase: workspace, compute (a cluster, or their own server), configuration, payment at a hosted checkout, then the install delivered. The customer sees field_values; the seller\'s members see the rest.' },
  { name: 'orders', description: 'Orders committed once a draft is paid (or free), with their delivery; the seller\'s and the customer\'s.' },
  { name: 'payments', description: 'The payment providers\' signed webhooks (Stripe, and the built-in local provider). Not for people.' },
  { name: 'notifications', description: 'Messages to the signed-in user about what needs a person: failures, degraded installs, plan changes, quotas, expiring tokens.' },
];

const DESCRIPTION = [
  'Multi-tenant workspace platform API.',
  '',
  '- **Errors**: every non-2xx response has one body, `{"error": {code, message, reason, metadata, field_violations, request_id}}` ' +
    '(the `Error` schema), except the OAuth endpoints under `/oauth/`, which answer in the RFC 6749 shape.',
  '- **Pagination**: lists are keyset paginated with signed opaque cursors (`limit` 1-100, default 50, newest first); ' +
    'pass `next_cursor` back as `cursor` with the same filters.',
  '- **Etags**: versioned resources carry `etag` (also in the `ETag` header); writes need `if-match`, and a stale one is ' +
    '409 ABORTED with the current etag in `error.metadata.etag`.',
  '- **Idempotency**: creating POSTs accept `idempotency-key` (1-64 characters, kept 24 hours), scoped to the principal ' +
    '(the user across their sessions, the API token, the OAuth client) and route; a replay returns the same status and resource ' +
    'with `idempotent-replayed: true`, a reuse with another request or workspace is 422. A replay is authorized like a first ' +
    'request: a caller who may not make it, or whose role is lower than at the first request, gets 403, never the stored answer.',
  '- **Workspace scope**: a workspace API token or OAuth client JWT acts on its own workspace; a user credential names the ' +
    'workspace in the `svc-context` header on workspace-scoped routes.',
  '- **`x-svc-auth`** on each operation tells how the caller is resolved: `none` (public), `user` (a user credential), ' +
    '`any` (any credential), `workspace` (credential\'s workspace or `svc-context`), `workspace-path` (the `{id}` in the path), ' +
    '`workspace-or-user` (as `workspace`, except that a user credential without `svc-context` acts for the user across workspaces), ' +
    '`machine` (a machine agent\'s credential, `svcm_...`, which no other route accepts).',
  '- **Custom methods** are `POST /resource/{id}:verb`; the colon may be sent percent-encoded (`%3A`).',
  '- **Long-running work** answers 202 with an `Operation` and `Location: /v1/operations/{id}`; its `metadata` and `response` ' +
    'are discriminated by `type`, one schema per workflow. A 201 carries the new resource\'s path in `Location`.',
  '- **`html_url`** of operations, clusters, installs, secrets and snippets opens the resource in the web app served at `/` ' +
    '(sign in there; members of its workspace only). `GET /v1/lookup/{id}` tells which workspace an id belongs to.',
  '- **Request limits**: a body over the size limit is 413 `BODY_TOO_LARGE`; a body that is not UTF-8 is 400 ' +
    '`INVALID_ENCODING`; JSON nesting more than 128 arrays and objects is 400 `NESTING_TOO_DEEP` (tighter per-field bounds, ' +
    'such as 64 levels of install values, answer with their own reasons below it). All three are checked before the body is parsed.',
  '- Every response carries `x-request-id`.',
].join('\n');

const REQUEST_ID_HEADER = {
  type: 'string',
  description: 'the request id: the caller\'s `x-request-id` if it was 1-128 of [A-Za-z0-9._:-], else a generated one; also in error bodies and logs',
};
const IDEMPOTENT_REPLAYED_HEADER = {
  type: 'string',
  enum: ['true'],
  description: '`true` when this is the stored result of an earlier request with the same idempotency-key (absent otherwise)',
};

type RouteOptions = Parameters<NonNullable<FastifyDynamicSwaggerOptions['transform']>>[0]['route'];

/**
 * Public routes (`auth: 'none'`) are documented with `security: []` and the others with the bearer
 * scheme; `x-svc-auth` names the route's auth mode (see AuthMode in platform/auth.ts) for client
 * generators. Every route may answer 503 while the instance drains (see app.ts), and every route
 * with a body 413, so those are added where a route does not list them.
 */
function transformRoute({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }) {
  if (!schema) return { schema, url };
  const auth = (route.config as { auth?: string } | undefined)?.auth ?? 'none';
  const response: Record<string, Record<string, unknown>> = { ...(schema.response as Record<string, Record<string, unknown>> | undefined) };
  if (!response['503']) response['503'] = errorResponse(503) as unknown as Record<string, unknown>;
  // Every body passes the size limit first (platform/validation.ts).
  if (schema.body && !response['413']) response['413'] = errorResponse(413) as unknown as Record<string, unknown>;
  // Headers every response of the route carries: x-request-id always (app.ts), idempotent-replayed
  // on the success of a route that takes idempotency-key (platform/idempotency.ts).
  const idempotent = Boolean((schema.headers as { properties?: Record<string, unknown> } | undefined)?.properties?.['idempotency-key']);
  for (const [status, entry] of Object.entries(response)) {
    const headers: Record<string, unknown> = { ...(entry.headers as Record<string, unknown> | undefined), 'x-request-id': REQUEST_ID_HEADER };
    if (idempotent && status.startsWith('2')) headers['idempotent-replayed'] = IDEMPOTENT_REPLAYED_HEADER;
    response[status] = { ...entry, headers };
  }
  return {
    schema: { ...schema, security: schema.security ?? (auth === 'none' ? [] : bearerSecurity), response, 'x-svc-auth': auth },
    url,
  };
}

export function openApiOptions(config: Config): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'svc: workspace platform API',
        version: '1.0.0',
        description: DESCRIPTION,
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: [{ url: config.publicUrl, description: 'this instance (SVC_PUBLIC_URL)' }],
      tags: OPENAPI_TAGS,
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description:
              'A 32-character session token (device grant or POST /v1/auth/sessions), a workspace API token (`sk_svc_...`), ' +
              'or an OAuth2 JWT (client credentials from POST /oauth/token, or a trusted external issuer).',
          },
          clientBasic: {
            type: 'http',
            scheme: 'basic',
            description:
              'OAuth client authentication on POST /oauth/token (client_secret_basic, RFC 6749 section 2.3.1): the oac_ id as the user ' +
              'name and the client secret as the password, each form-urlencoded first. Alternatively send client_id and client_secret in the body.',
          },
          metricsToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'GET /metrics on the public port: the operator\'s SVC_METRICS_TOKEN (no user or workspace credential).',
          },
        },
      },
    },
    transform: transformRoute as FastifyDynamicSwaggerOptions['transform'],
    // The discriminated Operation metadata/response unions, for client generators (operations.schemas.ts says why they differ from what the serializer compiles).
    transformObject: (document) => {
      const doc = (document as { openapiObject: { components?: { schemas?: Record<string, unknown> } } }).openapiObject;
      doc.components = { ...doc.components, schemas: { ...doc.components?.schemas, ...OPERATION_DOCUMENT_SCHEMAS } };
      return doc as ReturnType<NonNullable<FastifyDynamicSwaggerOptions['transformObject']>>;
    },
    // Schemas added with `$id` (app.addSchema) become `#/components/schemas/<$id>`.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  };
}
