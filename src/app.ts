// Builds the Fastify app: request ids, error shape, auth, OpenAPI, metrics and every route.
import Fastify, { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import fastifyCookie from '@fastify/cookie';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { registerAuth } from './platform/auth.js';
import { LongRequestSlots, longRequestLimits, registerLongRequestCaps } from './platform/long-requests.js';
import { registerIntegerBounds } from './platform/integer-bounds.js';
import { ApiError } from './platform/errors.js';
import { registerErrorHandling } from './platform/errorHandling.js';
import { clientErrorHandler, frameworkErrors, limitConnections, nextRequestId, serverOptions } from './platform/httpServer.js';
import { nativeSerialization } from './platform/serialization.js';
import { bodyStrictValidation, registerFormBodies, registerJsonOnlyApi } from './platform/validation.js';
import type { App } from './platform/http.js';
import type { Tracing } from './platform/tracing.js';
import { newReadEpoch } from './db/database.js';
import { registerMetrics } from './modules/system/metrics.js';
import { openApiOptions } from './modules/system/openapi.js';
import { systemRoutes } from './modules/system/system.routes.js';
import { sessionRoutes } from './modules/sessions/sessions.routes.js';
import { passwordResetRoutes } from './modules/sessions/password-resets.routes.js';
import { adminRoutes } from './modules/admin/admin.routes.js';
import { twoFactorRoutes } from './modules/sessions/two-factor.routes.js';
import { apiTokenRoutes } from './modules/tokens/tokens.routes.js';
import { workspaceRoutes } from './modules/workspaces/workspaces.routes.js';
import { tokenRoutes } from './modules/oauth/token.routes.js';
import { deviceRoutes } from './modules/device/device.routes.js';
import { devicePageRoutes } from './web/device.page.js';
import { oidcRoutes } from './web/oidc.page.js';
import { checkoutPageRoutes } from './web/checkout.page.js';
import { webAppRoutes } from './web/app.plugin.js';
import { lookupRoutes } from './modules/lookup/lookup.routes.js';
import { oauthRoutes } from './modules/oauth/oauth.routes.js';
import type { Services } from './services.js';
import { NAMED_SCHEMAS } from './schemas.js';
import { operationRoutes, registerOperationLocation } from './modules/operations/operations.routes.js';
import { clusterRoutes } from './modules/clusters/clusters.routes.js';
import { packageRoutes } from './modules/packages/packages.routes.js';
import { installRoutes } from './modules/installs/installs.routes.js';
import { previewHostnameRoutes } from './modules/preview-hostnames/preview-hostnames.routes.js';
import { secretRoutes } from './modules/secrets/secrets.routes.js';
import { auditRoutes } from './modules/audit/audit.routes.js';
import { planRoutes } from './modules/plans/plans.routes.js';
import { subscriptionRoutes } from './modules/subscriptions/subscriptions.routes.js';
import { quotaRoutes } from './modules/quotas/quotas.routes.js';
import { notificationRoutes } from './modules/notifications/notifications.routes.js';
import { snippetRoutes } from './modules/snippets/snippets.routes.js';
import { machineRoutes } from './modules/machines/machines.routes.js';
import { Socket } from 'node:net';
import { agentRoutes } from './modules/agents/agents.routes.js';
import { agentTurnRoutes } from './modules/agents/agent-turns.routes.js';
import { agentEventRoutes } from './modules/agents/agent-events.routes.js';
import { offerRoutes } from './modules/offers/offers.routes.js';
import { orderDraftRoutes } from './modules/orders/orders.routes.js';
import { paymentRoutes } from './modules/orders/payments.routes.js';
import { isRunCredentialRequest } from './modules/snippets/snippet-bridge.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** `POST /v1/x/{id}%3Averb` is routed as `:verb` (AIP-136 clients percent-encode the colon). */
export function decodeVerbColon(url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (!/%3a/i.test(path)) return url;
  return path.replace(/%3a/gi, ':') + (q === -1 ? '' : url.slice(q));
}

/**
 * One access-log line per request at info, at completion (method, url, status, time); the
 * arrival line that Fastify logs at info moves to debug, halving log volume on the hot path.
 */
class AccessLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/**
 * Refusals every route shares, before authentication:
 * - an empty path segment (`/v1/installs/`, `/v1/installs//x`) names no route: 404 like any unknown
 *   path, not a 400 about an empty path parameter;
 * - more than one Authorization header is 400: Node keeps only the first, and a proxy that takes
 *   the last one would disagree about who the caller is.
 */
function requestShapeError(request: FastifyRequest): ApiError | null {
  const url = request.url;
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (path.length > 1 && (path.endsWith('/') || path.includes('//'))) {
    return new ApiError('NOT_FOUND', `no route for ${request.method} ${path}`, { reason: 'ROUTE_NOT_FOUND' });
  }
  if (request.headers.authorization !== undefined) {
    const raw = request.raw.rawHeaders;
    let seen = 0;
    for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 13 && raw[i]!.toLowerCase() === 'authorization') seen++;
    if (seen > 1) {
      return new ApiError('INVALID_ARGUMENT', 'more than one Authorization header', {
        reason: 'DUPLICATE_AUTHORIZATION',
        fieldViolations: [{ field: 'header.authorization', description: 'send exactly one' }],
      });
    }
  }
  return null;
}

export interface AppOptions {
  services: Services;
  /** a pino logger; none in tests */
  logger?: FastifyServerOptions['loggerInstance'];
  /** tracing: the request spans' plugin is registered before anything else */
  tracing?: Tracing;
}

export interface BuiltApp {
  app: App;
  /** flips the app into draining mode: new requests get 503 UNAVAILABLE */
  beginShutdown(): void;
}

export async function buildApp(opts: AppOptions): Promise<BuiltApp> {
  const { services } = opts;
  const { config } = services;
  let closing = false;

  const app = Fastify({
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
    bodyLimit: config.bodyLimit,
    ...serverOptions(config),
    clientErrorHandler,
    frameworkErrors,
    return503OnClosing: false,
    logController: new AccessLog(),
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      const value = Array.isArray(incoming) ? incoming[0] : incoming;
      return value && REQUEST_ID.test(value) ? value : nextRequestId();
    },
    rewriteUrl: (req) => decodeVerbColon(req.url ?? '/'),
    ajv: {
      customOptions: {
        // Unknown fields are rejected (400), not silently dropped: typos are loud.
        removeAdditional: false,
        coerceTypes: 'array',
        useDefaults: true,
        allErrors: true,
      },
    },
    routerOptions: { ignoreTrailingSlash: false },
    // JSON bodies are validated without type coercion (`{"name": 5}` is 400); query, path and headers are coerced.
    // Responses: the declared properties copied and written by JSON.stringify (platform/serialization.ts).
    schemaController: { compilersFactory: { ...bodyStrictValidation().compilersFactory, buildSerializer: nativeSerialization() } },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;

  // First: the request's span covers every hook, and every route gets its span's hooks (onRoute).
  if (opts.tracing) await app.register(opts.tracing.fastifyPlugin);
  for (const schema of NAMED_SCHEMAS) app.addSchema(schema);
  // Before any route: every integer a request carries gets a bound the database can store.
  registerIntegerBounds(app);
  // Connections past the caps are closed before a byte is read; silent ones after a short timeout.
  limitConnections(app.server, config.http);

  // Callback-style hooks: they run on every request, and skip a promise each.
  app.addHook('onRequest', (request, reply, done) => {
    newReadEpoch();
    reply.header('x-request-id', request.id);
    // A snippet run still in progress while draining keeps its platform.request calls: the run
    // holds an in-flight request, and refusing its calls would fail it for no fault of its own.
    if (closing && !isRunCredentialRequest(request)) {
      reply.header('connection', 'close');
      done(new ApiError('UNAVAILABLE', 'the server is shutting down; retry on another instance', {
        reason: 'SHUTTING_DOWN',
        headers: { 'retry-after': '1' },
      }));
      return;
    }
    done(requestShapeError(request) ?? undefined);
  });
  // Requests already in flight when draining starts still finish, but their keep-alive sockets
  // must close after the response: otherwise the server waits for them until the grace period.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });

  registerErrorHandling(app);
  registerJsonOnlyApi(app); // also the text hygiene of every request (forbiddenInRequest)
  registerMetrics(app, { operationWaits: () => services.operations.waitCounts() });
  registerOperationLocation(app);

  await app.register(fastifySwagger, openApiOptions(config));

  // A worker-only process serves the probes and metrics over HTTP. It builds the API's routes too,
  // but they answer only in-process calls (the platform.request of agent tool calls it runs): a
  // request from a socket to any other route is 404, as if the route were not there.
  const probeRoutes = new Set<string>();
  let collectingProbes = config.role === 'worker';
  if (config.role === 'worker') {
    app.addHook('onRoute', (route) => {
      if (collectingProbes) probeRoutes.add(route.url);
    });
    app.addHook('onRequest', (request, _reply, done) => {
      const fromSocket = request.raw.socket instanceof Socket;
      done(fromSocket && !probeRoutes.has(request.routeOptions.url ?? '') ? new ApiError('NOT_FOUND', 'a worker process serves no API; send it to an API process', { reason: 'NOT_FOUND' }) : undefined);
    });
  }

  registerAuth(app, {
    verifiers: [services.sessions.verifier, services.apiTokens.verifier, services.oauth.verifier, services.runCredentials.verifier, services.machines.verifier],
    cookieSessions: services.sessions.verifier,
    memberships: services.workspaces.memberships,
  });
  // After authentication: streams and :wait calls are capped per principal and per workspace.
  registerLongRequestCaps(app, new LongRequestSlots(longRequestLimits(config)));

  systemRoutes(app, services);
  collectingProbes = false;
  sessionRoutes(app, services);
  passwordResetRoutes(app, services);
  adminRoutes(app, services);
  twoFactorRoutes(app, services);
  workspaceRoutes(app, services);
  apiTokenRoutes(app, services);
  oauthRoutes(app, services);
  operationRoutes(app, services, { waitSafetyPollMs: services.dialect === 'sqlite' ? 250 : 1000 });
  clusterRoutes(app, services);
  machineRoutes(app, services);
  packageRoutes(app, services);
  installRoutes(app, services);
  previewHostnameRoutes(app, services);
  secretRoutes(app, services);
  auditRoutes(app, services);
  planRoutes(app, services);
  subscriptionRoutes(app, services);
  quotaRoutes(app, services);
  notificationRoutes(app, services);
  snippetRoutes(app, services);
  agentRoutes(app, services);
  agentTurnRoutes(app, services);
  agentEventRoutes(app, services);
  offerRoutes(app, services);
  orderDraftRoutes(app, services);
  await paymentRoutes(app, services);
  lookupRoutes(app, services);
  // Event streams do not end on their own: end them when the app starts closing.
  app.addHook('preClose', async () => {
    services.agentStreams.closeAll();
    services.logStreams.closeAll();
  });
  // After the in-flight requests ended (a run is one): stop the sandbox's workers.
  app.addHook('onClose', async () => services.snippetRunner.close());
  app.addHook('onClose', async () => services.mail.close());
  // The OAuth endpoints (RFC 6749 and 8628 use forms) and the device approval pages, in their own
  // context: only they parse application/x-www-form-urlencoded and cookies; the JSON API never does.
  await app.register(async (forms: App) => {
    registerFormBodies(forms, 16 * 1024);
    await forms.register(fastifyCookie);
    tokenRoutes(forms, services);
    deviceRoutes(forms, services);
    devicePageRoutes(forms, services);
    // Single sign-on's start and callback: browser routes with a cookie of their own.
    oidcRoutes(forms, services);
    // The local payment provider's hosted checkout page (issue 25).
    checkoutPageRoutes(forms, { local: services.localPayments, config: services.config, sessions: services.sessions });
  });
  // The web app last, in its own context: its `/*` route answers only where no route above does.
  await app.register(async (web: App) => webAppRoutes(web, { dir: config.webDir }));

  await app.ready();
  return {
    app,
    beginShutdown: () => {
      closing = true;
      // Pending :wait calls answer now with the current state instead of holding the drain.
      services.operations.releaseWaiters();
      services.agentTurns.releaseWaiters();
    },
  };
}
