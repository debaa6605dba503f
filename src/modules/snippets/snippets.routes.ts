import type { FastifyReply, FastifyRequest } from 'fastify';
import lightMyRequest from 'light-my-request';
import { Type } from 'typebox';
import { scopeOf } from '../../platform/auth.js';
import { permissionDenied } from '../../platform/errors.js';
import { parseIfMatch } from '../../platform/etag.js';
import { bearerSecurity, headerOf, requestHeaders, responses, verbPath, withEtag, type App } from '../../platform/http.js';
import { pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { writerOfRequest } from './snippet-writer.js';
import type { RunContext } from './snippets.service.js';
import {
  CreatedSnippet, CreateSnippetBody, ExecuteBody, ExecuteResult, ListRunsQuery, ListSnippetsQuery, PatchSnippetBody, RunId, RunSnippetBody, Snippet,
  SnippetId, SnippetRun, type CreatedSnippetT,
} from './snippets.schemas.js';

const tags = ['snippets'];
const IdParams = Type.Object({ id: SnippetId });
const RunParams = Type.Object({ id: SnippetId, run_id: RunId });

const RUNS_AS =
  'The code runs in the sandbox (QuickJS in WebAssembly, a fresh context per run; 10 s of wall time unless overrides.timeout_ms ' +
  'asks for up to 60 s, 64 MiB, 50 platform.request calls, 1 MiB of output nested at most 64 levels, else INVALID_OUTPUT). Its ' +
  'platform.request calls are served in-process as the caller in the caller\'s workspace, never with more rights than the caller ' +
  'has, and with the credentials and svc-context set by the server (a snippet that sets authorization, cookie, svc-context or ' +
  'forwarding headers gets an error inside the code). A snippet\'s requests cannot start other runs (403). Every secret value the ' +
  'run read (`:access`) is replaced by `[masked]` in its output, logs and error before they are answered or stored (also its ' +
  'JSON-escaped, URL-encoded and base64 forms; a value under 8 characters only where it stands alone). Each run that runs counts ' +
  'against the daily `snippets/runs` quota (429 QUOTA_EXCEEDED past it, with retry-after); a refused run costs nothing. A ' +
  'workspace runs at most SVC_SNIPPET_CONCURRENCY snippets at once; the next SVC_SNIPPET_QUEUE wait for a worker, each at most ' +
  'its own time limit (which counts from the request, so the wait shortens the run) and at most SVC_SANDBOX_QUEUE_TIMEOUT_MS; ' +
  'beyond that the run is refused with 429 (reason SANDBOX_BUSY, metadata.cause tenant_queue_full, queue_full, time_limit or ' +
  'queue_timeout; retry-after: when a busy worker\'s run reaches its limit).';

/** A snippet's own requests may read and change the platform, but not start runs: a run waiting on a run could hold every worker. */
function refuseNestedRun(request: FastifyRequest): void {
  const principal = request.principal;
  if (principal?.kind === 'workspace' && principal.via === 'snippet_run') {
    throw permissionDenied('a snippet cannot start snippet runs', 'NESTED_SNIPPET_RUN');
  }
}

export function snippetRoutes(app: App, s: Pick<Services, 'idempotency' | 'snippets'>): void {
  // app.routing, as app.inject does, but also while the app is closing: a run still in progress
  // when draining starts keeps the API it was promised (app.inject refuses once close() began).
  const dispatch: RunContext['dispatch'] = (options) => lightMyRequest(app.routing, options);
  const context = (request: FastifyRequest): RunContext => ({ dispatch, requestId: request.id });
  const setArchived = (archive: boolean) => async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    return withEtag(reply, await s.snippets.setArchived(scopeOf(request), request.params.id, revision, archive));
  };

  app.post('/v1/snippets', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'createSnippet', summary: 'Create a snippet',
      description:
        'Any member may create snippets. 201 with `snippet_id` (the new id) and the whole snippet, its etag in the ETag header ' +
        'and its URL in Location. Defaults: visibility `workspace`, origin `user`, purpose `general`, inputs []. Declared inputs are ' +
        'checked (keys unique; `options` with enum only, `resource_type` with resource only, `min`/`max` with number only, defaults ' +
        'valid; a default is a value of its kind, never a nested document): 400 with field violations. The creator is the snippet\'s ' +
        'first `last_writer_id`. A workspace being deleted is 422 (reason WORKSPACE_DELETING). Accepts idempotency-key.',
      headers: requestHeaders({ idempotency: 'optional' }), body: CreateSnippetBody,
      response: responses({ 201: CreatedSnippet }, [400, 403, 409, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    const located = (snippet: CreatedSnippetT) => withEtag(reply.header('location', `/v1/snippets/${snippet.id}`), snippet);
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      async (id) => {
        const snippet = await s.snippets.loadCreated(scope.workspaceId, id);
        return snippet && located(snippet);
      },
      async (tx) => {
        const snippet = located(await s.snippets.createSnippet(writerOfRequest(request, scope), request.body, tx));
        return { status: 201, body: snippet, resourceId: snippet.id };
      });
  });

  app.get('/v1/snippets', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listSnippets', summary: 'List snippets',
      description:
        'Snippets of the workspace, newest first, filtered by `purpose` and `visibility`. Archived snippets are left out unless ' +
        '`archived=true`, which lists them too (AIP-164\'s show_deleted). Any member may list them.',
      headers: requestHeaders(), querystring: ListSnippetsQuery,
      response: responses({ 200: pageOf(Snippet, 'A page of snippets') }),
    },
  }, async (request) => s.snippets.listSnippets(scopeOf(request), request.query));

  app.post(verbPath('/v1/snippets', 'execute'), {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'executeSnippetCode', summary: 'Run code without saving it',
      description:
        `Any member may run code. Runs \`code\` once with \`inputs\` (as given: there are no declarations; nested at most 32 levels ` +
        `and 1 MiB as JSON, else 400 INVALID_INPUTS) and answers 200 with its output or error, logs and stats when it ends, also when ` +
        `the run failed (INVALID_OUTPUT, TIMEOUT, ...); nothing is stored. The run acts with the caller's rights. ${RUNS_AS}`,
      headers: requestHeaders(), body: ExecuteBody,
      response: responses({ 200: ExecuteResult }, [400, 403, 422, 429]),
    },
  }, async (request) => {
    refuseNestedRun(request);
    return s.snippets.execute(scopeOf(request), request.body, context(request));
  });

  app.get('/v1/snippets/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getSnippet', summary: 'Get a snippet',
      description: 'Any member may read it, archived or not. Sends the etag in the ETag header.',
      params: IdParams, headers: requestHeaders(),
      response: responses({ 200: Snippet }),
    },
  }, async (request, reply) => withEtag(reply, await s.snippets.getSnippet(scopeOf(request), request.params.id)));

  app.patch('/v1/snippets/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'updateSnippet', summary: 'Change a snippet',
      description:
        'Any member may change snippets. if-match is required; a stale etag is 409 ABORTED with the current etag in ' +
        'error.metadata.etag. Every change makes a new etag. Whoever changes what a run does, `code` or `inputs` (their defaults ' +
        'included; sending either counts), becomes the snippet\'s `last_writer_id` and vouches for it: later runs act with at most the ' +
        'rights that writer has when each run starts. Name, description, display_type, visibility and purpose leave the last writer as ' +
        'it is. An archived snippet is 422 (reason SNIPPET_ARCHIVED): restore it first.',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required' }), body: PatchSnippetBody,
      response: responses({ 200: Snippet }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    return withEtag(reply, await s.snippets.updateSnippet(writerOfRequest(request, scopeOf(request)), request.params.id, revision, request.body));
  });

  app.delete('/v1/snippets/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'archiveSnippet', summary: 'Archive a snippet',
      description:
        'Any member may archive. if-match is required. 200 with the snippet, `archived_at` set and a new etag; an archived snippet ' +
        'cannot run (422 SNIPPET_ARCHIVED) and is listed only with archived=true; its runs stay readable. Archiving an archived ' +
        'snippet returns it unchanged. `POST /v1/snippets/{id}:undelete` restores it.',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 200: Snippet }, [400, 403, 404, 409]),
    },
  }, setArchived(true));

  app.post(verbPath('/v1/snippets/:id', 'undelete'), {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'undeleteSnippet', summary: 'Restore an archived snippet',
      description:
        'Any member may restore. if-match is required. 200 with the snippet active again (`archived_at` null) and a new etag; ' +
        'an active snippet is returned unchanged. No body.',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 200: Snippet }, [400, 403, 404, 409]),
    },
  }, setArchived(false));

  app.post('/v1/snippets/:id/runs', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'runSnippet', summary: 'Run a snippet',
      description:
        'Any member may run snippets. Checks `inputs` against the snippet\'s declared inputs (400 with field violations under ' +
        '`body.inputs`; defaults fill what is left out), runs the code now and answers 201 with the finished run, full view, ' +
        'when it ends (the run is recorded whatever its outcome: `succeeded`, `failed` or `timed_out`). An archived snippet is ' +
        '422 (reason SNIPPET_ARCHIVED). Stored code acts with the rights its last writer (`last_writer_id`) has when the run starts, ' +
        'and never more than the caller\'s: the lower of the two roles, read now (a demoted writer gives the lower role). A writer who ' +
        'left the workspace, or whose API token or OAuth client was revoked or expired, gives no rights: the code does not run, and ' +
        'the run is recorded as `failed` with error code WRITER_UNAUTHORIZED (not counted against the quota); someone with the rights ' +
        `must save the code or inputs again. ${RUNS_AS} Accepts idempotency-key: a retry returns the recorded run without running again.`,
      params: IdParams, headers: requestHeaders({ idempotency: 'optional' }), body: RunSnippetBody,
      response: responses({ 201: SnippetRun }, [400, 403, 404, 409, 422, 429]),
    },
  }, async (request, reply) => {
    refuseNestedRun(request);
    const scope = scopeOf(request);
    const { id } = request.params;
    const located = <T extends { id: string }>(run: T): T => {
      reply.header('location', `/v1/snippets/${id}/runs/${run.id}`);
      return run;
    };
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      async (runId) => {
        const run = await s.snippets.loadRun(scope, id, runId);
        return run && located(run);
      },
      async (tx, finished) => {
        const run = located(await s.snippets.recordRun(tx, finished));
        return { status: 201, body: run, resourceId: run.id };
      },
      () => s.snippets.runSnippet(scope, id, request.body ?? {}, context(request)));
  });

  app.get('/v1/snippets/:id/runs', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listSnippetRuns', summary: 'List a snippet\'s runs',
      description:
        'Runs of the snippet, newest first, filtered by `state`. `view=basic` (default) leaves out `output`, `error` and `logs`; ' +
        '`view=full` includes them, with every secret value the run read stored as `[masked]`; a run that read a secret value ' +
        '(`secret_derived`) has them withheld from members (`output_withheld`). Any member may list them, also of an archived snippet.',
      params: IdParams, headers: requestHeaders(), querystring: ListRunsQuery,
      response: responses({ 200: pageOf(SnippetRun, 'A page of snippet runs') }),
    },
  }, async (request) => s.snippets.listRuns(scopeOf(request), request.params.id, request.query));

  app.get('/v1/snippets/:id/runs/:run_id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getSnippetRun', summary: 'Get a snippet run',
      description: 'One run, always in the full view (output, error, logs). Any member may read it; the output, error and logs of a run ' +
        'that read a secret value (`secret_derived`) only roles that may read secret values (admin, owner): others get them withheld ' +
        '(`output_withheld` true, output and error null, logs empty).',
      params: RunParams, headers: requestHeaders(),
      response: responses({ 200: SnippetRun }),
    },
  }, async (request) => s.snippets.getRun(scopeOf(request), request.params.id, request.params.run_id));
}
