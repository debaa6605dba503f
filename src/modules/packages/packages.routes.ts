import { Type } from 'typebox';
import { scopeOf } from '../../platform/auth.js';
import { bearerSecurity, headerOf, requestHeaders, responses, withEtag, type App } from '../../platform/http.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { CreatePackageBody, CreateVersionBody, Package, PackageId, PackageVersion, PackageVersionId } from './packages.schemas.js';

const tags = ['packages'];
const IdParams = Type.Object({ id: PackageId });
const VersionParams = Type.Object({ id: PackageId, version_id: PackageVersionId });

export function packageRoutes(app: App, s: Pick<Services, 'idempotency' | 'packages'>): void {
  app.post('/v1/packages', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'createPackage', summary: 'Create a package',
      description:
        'Needs the admin or owner role. Creates a package without versions (`latest_version` null); publish versions with ' +
        '`POST /v1/packages/{id}/versions`. 201 with the package, its URL in Location and its etag in ETag. A taken name is ' +
        '409 ALREADY_EXISTS (reason PACKAGE_NAME_TAKEN); a workspace being deleted is 422 (reason WORKSPACE_DELETING). Accepts idempotency-key.',
      headers: requestHeaders({ idempotency: 'optional' }), body: CreatePackageBody,
      response: responses({ 201: Package }, [400, 403, 409, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      async (id) => {
        const pkg = await s.packages.loadPackage(scope.workspaceId, id);
        if (pkg) withEtag(reply.header('location', `/v1/packages/${pkg.id}`), pkg);
        return pkg;
      },
      async (tx) => {
        const pkg = await s.packages.createPackage(scope, request.body, tx);
        withEtag(reply.header('location', `/v1/packages/${pkg.id}`), pkg);
        return { status: 201, body: pkg, resourceId: pkg.id };
      });
  });

  app.get('/v1/packages', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listPackages', summary: 'List packages',
      description: 'Packages of the workspace, newest first, each with its latest_version. Any member may list them.',
      headers: requestHeaders(), querystring: Type.Object(PageQuery, { additionalProperties: false }),
      response: responses({ 200: pageOf(Package, 'A page of packages') }),
    },
  }, async (request) => s.packages.listPackages(scopeOf(request), request.query));

  app.get('/v1/packages/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getPackage', summary: 'Get a package',
      description: 'Any member may read it. Sends the etag in the ETag header.',
      params: IdParams, headers: requestHeaders(),
      response: responses({ 200: Package }),
    },
  }, async (request, reply) => withEtag(reply, await s.packages.getPackage(scopeOf(request), request.params.id)));

  app.post('/v1/packages/:id/versions', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'createPackageVersion', summary: 'Publish a package version',
      description:
        'Needs the admin or owner role. Publishes an immutable version: there is no way to change or delete it (a fix is a new ' +
        'version). 201 with the version and its URL in Location. An unknown package is 404 (checked before the body). The semver ' +
        '(reason SEMVER_INVALID), the input schema (reason INPUT_SCHEMA_INVALID: compiled here, so an install never meets a broken ' +
        'one) and the manifest (reason MANIFEST_INVALID: unique route keys; namespaced objects without metadata.namespace; known ' +
        'placeholders only) are 400 with field_violations naming each problem. Placeholders: `{{ values.<path> }}`, `{{ install.id }}`, ' +
        '`{{ install.namespace }}`, `{{ render.id }}`, and for install values that reference secrets (`{"$secret": "sec_...", ' +
        '"version": "latest"}` where the input schema expects a string) `{{ secret.name }}` and `{{ secret.key.<path> }}`: at each ' +
        'deploy the worker reads the referenced versions and applies them as one Kubernetes Secret, `{{ secret.name }}`, in the ' +
        'install\'s namespace (the local driver keeps only an HMAC), with one key per reference, `{{ secret.key.<path> }}` (the values ' +
        'path, dotted). Refer to it as Kubernetes does, e.g. `valueFrom: {secretKeyRef: {name: "{{ secret.name }}", key: ' +
        '"{{ secret.key.db.password }}"}}` or a `secret` volume; `{{ values.<path> }}` on a reference fails the install (400 at ' +
        'create): a value is never written into an object as text, nor stored in a render. A semver the package already has is 409 ' +
        'ALREADY_EXISTS (reason VERSION_EXISTS). The package\'s etag and updated_at move (its latest_version may change). ' +
        'A workspace being deleted is 422 (reason WORKSPACE_DELETING). Accepts idempotency-key.',
      params: IdParams, headers: requestHeaders({ idempotency: 'optional' }), body: CreateVersionBody,
      response: responses({ 201: PackageVersion }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    const location = (v: { id: string; package_id: string }) => `/v1/packages/${v.package_id}/versions/${v.id}`;
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      async (id) => {
        const version = await s.packages.loadVersion(scope.workspaceId, id);
        if (version) reply.header('location', location(version));
        return version;
      },
      async (tx) => {
        const version = await s.packages.createVersion(scope, request.params.id, request.body, tx);
        reply.header('location', location(version));
        return { status: 201, body: version, resourceId: version.id };
      });
  });

  app.get('/v1/packages/:id/versions', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listPackageVersions', summary: 'List the versions of a package',
      description:
        'Versions of the package, newest published first (publication order, not semver order; `latest_version` of the package ' +
        'gives the highest release). A cursor is bound to its package. Any member may list them.',
      params: IdParams, headers: requestHeaders(), querystring: Type.Object(PageQuery, { additionalProperties: false }),
      response: responses({ 200: pageOf(PackageVersion, 'A page of package versions') }),
    },
  }, async (request) => s.packages.listVersions(scopeOf(request), request.params.id, request.query));

  app.get('/v1/packages/:id/versions/:version_id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getPackageVersion', summary: 'Get a package version',
      description: 'Any member may read it. Versions are immutable: no etag. A version of another package is 404.',
      params: VersionParams, headers: requestHeaders(),
      response: responses({ 200: PackageVersion }),
    },
  }, async (request) => s.packages.getVersion(scopeOf(request), request.params.id, request.params.version_id));
}
