import { Type } from 'typebox';
import { scopeOf } from '../../platform/auth.js';
import { parseIfMatch } from '../../platform/etag.js';
import { bearerSecurity, headerOf, NoContent, requestHeaders, responses, verbPath, withEtag, type App } from '../../platform/http.js';
import { pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import {
  AccessedSecretVersion, AccessVersionId, CreateSecretBody, CreateVersionBody, DeleteSecretQuery, ListSecretsQuery, ListVersionsQuery,
  PatchSecretBody, Secret, SecretId, SecretVersion, VersionId,
} from './secrets.schemas.js';
import type { VersionTransition } from './secret-versions.service.js';

const tags = ['secrets'];
const versionTags = ['secret versions'];
const IdParams = Type.Object({ id: SecretId });
const VersionParams = Type.Object({ id: SecretId, vid: VersionId });
const ETAG_RULE = 'if-match is required (400 without); a stale etag is 409 ABORTED with the current etag in error.metadata.etag.';

const TRANSITIONS: { verb: VersionTransition; operationId: string; summary: string; description: string }[] = [
  {
    verb: 'disable', operationId: 'disableSecretVersion', summary: 'Disable a secret version',
    description: 'enabled -> disabled: the version is kept but `:access` refuses it (422 VERSION_DISABLED) and `latest` skips it. ' +
      'A disabled version is returned as it is. A destroyed version is 422 (reason VERSION_DESTROYED); a version of a deleted secret 422 (SECRET_DELETED).',
  },
  {
    verb: 'enable', operationId: 'enableSecretVersion', summary: 'Enable a secret version',
    description: 'disabled -> enabled. An enabled version is returned as it is. A destroyed version is 422 (reason VERSION_DESTROYED): ' +
      'destroyed is final; a version of a deleted secret 422 (SECRET_DELETED).',
  },
  {
    verb: 'destroy', operationId: 'destroySecretVersion', summary: 'Destroy a secret version',
    description: 'Any state -> destroyed, for good: `destroyed_at` is set and the stored ciphertext, its wrapped data key and key id ' +
      'are deleted (crypto-shredding; SQLite zeroes the freed bytes). A destroyed version is returned as it is. Allowed on a deleted secret too.',
  },
];

export function secretRoutes(app: App, s: Pick<Services, 'idempotency' | 'secretVersions' | 'secrets'>): void {
  app.addSchema(Secret);
  app.addSchema(SecretVersion);
  app.addSchema(AccessedSecretVersion);

  app.post('/v1/secrets', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'createSecret', summary: 'Create a secret',
      description:
        'Needs the admin or owner role. Creates the secret with its first value as version 1, enabled: 201 with the secret (never the ' +
        'value). The value is sealed with a data key of its own (AES-256-GCM, bound to the workspace, secret and version ids), ' +
        'wrapped with the service key. A taken name is 409 ALREADY_EXISTS; a value over 64 KiB of UTF-8 is 400 (VALUE_TOO_LARGE); ' +
        'a workspace being deleted is 422 (WORKSPACE_DELETING). Recorded in the audit log. Accepts idempotency-key.',
      headers: requestHeaders({ idempotency: 'optional' }), body: CreateSecretBody,
      response: responses({ 201: Secret }, [400, 403, 409, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    const located = <T extends { id: string; etag: string }>(secret: T) => withEtag(reply.header('location', `/v1/secrets/${secret.id}`), secret);
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      async (id) => {
        const secret = await s.secrets.loadSecret(scope.workspaceId, id);
        return secret && located(secret);
      },
      async (tx) => {
        const secret = located(await s.secrets.createSecret(scope, request.body, tx));
        return { status: 201, body: secret, resourceId: secret.id };
      });
  });

  app.get('/v1/secrets', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listSecrets', summary: 'List secrets',
      description: 'Secrets of the workspace, newest first, active and soft-deleted unless `state` says which; filter by `kind`. ' +
        'Metadata only, never a value. Any member may list them.',
      headers: requestHeaders(), querystring: ListSecretsQuery,
      response: responses({ 200: pageOf(Secret, 'A page of secrets') }),
    },
  }, async (request) => s.secrets.listSecrets(scopeOf(request), request.query));

  app.get('/v1/secrets/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getSecret', summary: 'Get a secret',
      description: 'The secret\'s metadata, never a value. Any member may read it. Sends the etag in the ETag header.',
      params: IdParams, headers: requestHeaders(),
      response: responses({ 200: Secret }),
    },
  }, async (request, reply) => withEtag(reply, await s.secrets.getSecret(scopeOf(request), request.params.id)));

  app.patch('/v1/secrets/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'updateSecret', summary: 'Change a secret',
      description:
        `Needs the admin or owner role. ${ETAG_RULE} Sets the name, description, labels or version_aliases (labels and aliases ` +
        'replace the current ones as a whole; an alias must name an existing version that is not destroyed: 400 ALIAS_TARGET_INVALID). ' +
        'A taken name is 409 ALREADY_EXISTS; a soft-deleted secret is 422 (SECRET_DELETED). Recorded in the audit log.',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required' }), body: PatchSecretBody,
      response: responses({ 200: Secret }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    return withEtag(reply, await s.secrets.updateSecret(scopeOf(request), request.params.id, revision, request.body));
  });

  app.delete('/v1/secrets/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'deleteSecret', summary: 'Delete a secret',
      description:
        `Needs the admin or owner role. ${ETAG_RULE} Without \`force\`: a soft delete, 200 with the secret \`soft_deleted\` and ` +
        '`purge_at` = now + SVC_SECRET_RETENTION (default 7 days); its values cannot be accessed, `:undelete` restores it until ' +
        '`purge_at`, after which a worker destroys and removes it. Deleting a soft-deleted secret again returns it unchanged. ' +
        'With `force=true`: every version is destroyed and the secret removed now, 204. Recorded in the audit log.',
      params: IdParams, querystring: DeleteSecretQuery, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 200: Secret, 204: NoContent }, [400, 403, 404, 409]),
    },
  }, async (request, reply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    const secret = await s.secrets.deleteSecret(scopeOf(request), request.params.id, revision, request.query.force === true);
    if (secret === null) return reply.code(204).send();
    return withEtag(reply, secret);
  });

  app.post(verbPath('/v1/secrets/:id', 'undelete'), {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'undeleteSecret', summary: 'Restore a deleted secret',
      description:
        `Needs the admin or owner role. ${ETAG_RULE} A soft-deleted secret becomes active again, with its versions as they were, ` +
        'before its `purge_at`: 200. An active secret is 422 (SECRET_NOT_DELETED); one past its purge time 422 (SECRET_PURGE_DUE). No body.',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 200: Secret }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    return withEtag(reply, await s.secrets.undeleteSecret(scopeOf(request), request.params.id, revision));
  });

  app.post('/v1/secrets/:id/versions', {
    config: { auth: 'workspace' },
    schema: {
      tags: versionTags, security: bearerSecurity, operationId: 'createSecretVersion', summary: 'Add a secret version',
      description:
        'Needs the admin or owner role. The value becomes the next version (`version_number` = the highest so far + 1, never reused, ' +
        'also under concurrent adds), enabled: 201 with the version. A soft-deleted secret is 422 (SECRET_DELETED); a value over ' +
        '64 KiB of UTF-8 is 400 (VALUE_TOO_LARGE). Recorded in the audit log. Accepts idempotency-key.',
      params: IdParams, headers: requestHeaders({ idempotency: 'optional' }), body: CreateVersionBody,
      response: responses({ 201: SecretVersion }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    const { id } = request.params;
    const located = <T extends { id: string; etag: string }>(v: T) => withEtag(reply.header('location', `/v1/secrets/${id}/versions/${v.id}`), v);
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      async (vid) => {
        const version = await s.secretVersions.loadVersion(scope.workspaceId, id, vid);
        return version && located(version);
      },
      async (tx) => {
        const version = located(await s.secretVersions.createVersion(scope, id, request.body, tx));
        return { status: 201, body: version, resourceId: version.id };
      });
  });

  app.get('/v1/secrets/:id/versions', {
    config: { auth: 'workspace' },
    schema: {
      tags: versionTags, security: bearerSecurity, operationId: 'listSecretVersions', summary: 'List secret versions',
      description: 'Versions of the secret, newest first, optionally only those in `state`; never a value. Any member may list them.',
      params: IdParams, headers: requestHeaders(), querystring: ListVersionsQuery,
      response: responses({ 200: pageOf(SecretVersion, 'A page of secret versions') }),
    },
  }, async (request) => s.secretVersions.listVersions(scopeOf(request), request.params.id, request.query));

  app.get('/v1/secrets/:id/versions/:vid', {
    config: { auth: 'workspace' },
    schema: {
      tags: versionTags, security: bearerSecurity, operationId: 'getSecretVersion', summary: 'Get a secret version',
      description: 'One version, without its value. Any member may read it. Sends the etag in the ETag header.',
      params: VersionParams, headers: requestHeaders(),
      response: responses({ 200: SecretVersion }),
    },
  }, async (request, reply) => withEtag(reply, await s.secretVersions.getVersion(scopeOf(request), request.params.id, request.params.vid)));

  for (const t of TRANSITIONS) {
    app.post(verbPath('/v1/secrets/:id/versions/:vid', t.verb), {
      config: { auth: 'workspace' },
      schema: {
        tags: versionTags, security: bearerSecurity, operationId: t.operationId, summary: t.summary,
        description: `Needs the admin or owner role. ${ETAG_RULE} \`if-match: *\` matches the version as it is now and never conflicts, also under concurrent calls. ${t.description} 200 with the version and its new etag. ` +
          'Recorded in the audit log. No body.',
        params: VersionParams, headers: requestHeaders({ ifMatch: 'required' }),
        response: responses({ 200: SecretVersion }, [400, 403, 404, 409, 422]),
      },
    }, async (request, reply) => {
      const revision = parseIfMatch(headerOf(request, 'if-match'));
      return withEtag(reply, await s.secretVersions.transition(scopeOf(request), request.params.id, request.params.vid, revision, t.verb));
    });
  }

  app.post(verbPath('/v1/secrets/:id/versions/:vid', 'access'), {
    config: { auth: 'workspace' },
    schema: {
      tags: versionTags, security: bearerSecurity, operationId: 'accessSecretVersion', summary: 'Read a secret value',
      description:
        'Needs the admin or owner role. Returns the value of the version `vid` names: its id, its number, `latest` (the highest ' +
        'enabled version) or an alias of the secret. A disabled version is 422 (VERSION_DISABLED), a destroyed one 422 ' +
        '(VERSION_DESTROYED), a soft-deleted secret 422 (SECRET_DELETED), `latest` without an enabled version 422 (NO_ENABLED_VERSION). ' +
        'Every read is recorded in the audit log (with the request id) before the value is sent, with `cache-control: no-store`. No body.',
      params: Type.Object({ id: SecretId, vid: AccessVersionId }), headers: requestHeaders(),
      response: responses({ 200: AccessedSecretVersion }, [400, 403, 404, 422]),
      // The command-line client also offers this as `svc secrets access <id> <version>` (issue 11).
      'x-svc-cli-aliases': ['secrets access'],
    },
  }, async (request, reply) => {
    const accessed = await s.secretVersions.accessVersion(scopeOf(request), request.params.id, request.params.vid);
    reply.header('cache-control', 'no-store');
    return accessed;
  });
}
