// Packages and their immutable versions (API.md section 6).
import { Type, type Static } from 'typebox';
import { StringEnum } from '../../platform/http.js';
import { INPUT_SCHEMA_MAX_BYTES, INPUT_SCHEMA_MAX_DEPTH, INPUT_SCHEMA_MAX_PATTERNS, VALUES_MAX_BYTES, VALUES_MAX_DEPTH } from './input-schema.js';
import { MAX_RESOURCES, MAX_ROUTES, ROUTE_KEY_PATTERN, ROUTE_PROTOCOLS } from './package-manifest.js';

export const PackageId = Type.String({ minLength: 1, maxLength: 54, description: 'package id (pkg_...)' });
export const PackageVersionId = Type.String({ minLength: 1, maxLength: 55, description: 'package version id (pkv_...)' });

export const Package = Type.Object(
  {
    id: Type.String({ description: 'pkg_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    name: Type.String({ description: 'unique in the workspace, 1-100 characters' }),
    description: Type.String({ description: 'free text, at most 500 characters; empty when none was given' }),
    latest_version: Type.Union([Type.String(), Type.Null()], {
      description:
        'the highest released semver by SemVer 2.0 precedence (1.10.0 is above 1.9.0; prereleases such as 1.1.0-rc.1 never count); ' +
        'null while the package has no released version. What an install pinned to `latest` gets.',
    }),
    created_at: Type.Integer({ minimum: 0, description: 'Unix seconds' }),
    updated_at: Type.Integer({ minimum: 0, description: 'Unix seconds; also moves when a version is published' }),
    etag: Type.String({ description: 'changes on every write, also when a version is published (latest_version may change)' }),
  },
  {
    $id: 'Package',
    description: 'A package: software that can be installed on a cluster, published as immutable versions.',
    examples: [{ id: 'pkg_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', name: 'hello', description: 'A hello-world web service', latest_version: '1.2.0', created_at: 1767225600, updated_at: 1767225700, etag: '2' }],
  },
);
export type PackageT = Static<typeof Package>;

export const CreatePackageBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, description: 'free text, unique in the workspace (a taken name is 409 ALREADY_EXISTS)' }),
    description: Type.Optional(Type.String({ maxLength: 500, description: 'what the package is; empty by default' })),
  },
  { additionalProperties: false, description: 'A new package, without versions yet.', examples: [{ name: 'hello', description: 'A hello-world web service' }] },
);
export type CreatePackageBodyT = Static<typeof CreatePackageBody>;

const RouteProtocol = StringEnum(ROUTE_PROTOCOLS, { description: 'what the route speaks: http (the default), websocket or grpc' });

const RouteService = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$', description: 'a Service of the manifest (a DNS label)' }),
    port: Type.Integer({ minimum: 1, maximum: 65535, description: 'the Service port that serves the route' }),
  },
  {
    additionalProperties: false,
    description:
      'on a Kubernetes cluster, the Service (in the install\'s namespace) and port behind the route: `name` must be the `metadata.name` of ' +
      'a Service (apiVersion v1) among the manifest\'s resources (400 MANIFEST_INVALID at `body.manifest.routes.N.service.name` otherwise). ' +
      'The driver routes the install URL\'s hostname for the route, and the preview hostnames that go to it, to this Service and port: an ' +
      'HTTPRoute attached to the cluster\'s Gateway, else an Ingress (docs/clusters-and-installs.md). A route without `service` gets no ' +
      'route object: on a cluster, nothing reaches it',
  },
);

const routeKeyDescription =
  'names the route; the install\'s URL for it is `<route_key>-<install>.<preview domain>`. 1-32 of [a-z0-9-], starting and ending ' +
  'with a letter or digit; unique in the manifest';

const Route = Type.Object(
  {
    route_key: Type.String({ minLength: 1, maxLength: 32, pattern: ROUTE_KEY_PATTERN, description: routeKeyDescription }),
    protocol: Type.Optional(RouteProtocol),
    service: Type.Optional(RouteService),
  },
  { additionalProperties: false, description: 'A route the package exposes: each becomes a reachable URL of every install.' },
);

const objectDescription =
  'A namespaced Kubernetes object, as `kubectl apply` takes it (other fields are kept as given). `metadata.namespace` and ' +
  '`metadata.generateName` are refused: the driver puts every object into the install\'s own namespace, by name. Cluster-scoped kinds ' +
  '(Namespace, ClusterRole, ClusterRoleBinding, CustomResourceDefinition, PersistentVolume, StorageClass, PriorityClass, IngressClass, ' +
  'GatewayClass, APIService, webhook configurations, Node...) are refused. Any string value may hold placeholders, substituted at each ' +
  'render: `{{ values.<path> }}` (an install value, after the input schema\'s defaults), `{{ install.id }}`, `{{ install.namespace }}`, ' +
  '`{{ render.id }}`. A string that is exactly one placeholder takes the value\'s JSON type (`"{{ values.replicas }}"` becomes 3); ' +
  'otherwise the value is interpolated as text. Keys, `apiVersion` and `kind` are never substituted. Install values that reference ' +
  'secrets are never written into objects: `{{ secret.name }}` is the install\'s Kubernetes Secret (`svc-secrets`) and ' +
  '`{{ secret.key.<path> }}` the key in it holding the value referenced at values.<path>, e.g. ' +
  '`env: [{name: DB_PASSWORD, valueFrom: {secretKeyRef: {name: "{{ secret.name }}", key: "{{ secret.key.db_password }}"}}}]`.';

const KubernetesObjectSchema = Type.Object(
  {
    apiVersion: Type.String({ minLength: 1, maxLength: 253, description: 'e.g. `apps/v1`; no placeholders' }),
    kind: Type.String({ minLength: 1, maxLength: 63, description: 'e.g. `Deployment`; namespaced kinds only; no placeholders' }),
    metadata: Type.Object(
      { name: Type.String({ minLength: 1, maxLength: 253, description: 'the object\'s name (placeholders allowed); apiVersion, kind and name are unique in the manifest' }) },
      { additionalProperties: true, description: 'object metadata: name, labels, annotations... but no namespace' },
    ),
  },
  { additionalProperties: true, description: objectDescription },
);

export const ManifestBody = Type.Object(
  {
    routes: Type.Array(Route, { maxItems: MAX_ROUTES, description: `the routes the package exposes, 0-${MAX_ROUTES}` }),
    resources: Type.Optional(Type.Array(KubernetesObjectSchema, { maxItems: MAX_RESOURCES, description: `the objects each install deploys, 0-${MAX_RESOURCES}` })),
  },
  { additionalProperties: false, description: 'What an install deploys and which routes it exposes.' },
);

const inputSchemaDescription =
  `A JSON Schema (draft 2020-12) of the install values; its root must have \`type: "object"\`. At most ${INPUT_SCHEMA_MAX_BYTES / 1024} KiB ` +
  `as JSON and ${INPUT_SCHEMA_MAX_DEPTH} levels deep. Compiled at publish with Ajv in strict mode: unknown keywords and formats, ` +
  'type-specific keywords without the matching `type`, and `$ref`s outside the schema (no remote references are fetched) are 400. ' +
  '`default`s are applied to the values of installs. Regular expressions (`pattern`, `patternProperties`, at most ' +
  `${INPUT_SCHEMA_MAX_PATTERNS} per schema) run on RE2, a linear-time engine: what it cannot express (lookahead, lookbehind, ` +
  'backreferences) is refused; `\\s` matches ASCII whitespace only. `uniqueItems` is checked in linear time. Install values are ' +
  `at most ${VALUES_MAX_BYTES / 1024} KiB as JSON and ${VALUES_MAX_DEPTH} levels deep (400 VALUES_TOO_LARGE / VALUES_INVALID).`;

export const CreateVersionBody = Type.Object(
  {
    semver: Type.String({
      minLength: 5,
      maxLength: 128,
      description:
        'a SemVer 2.0 version, strictly: `1.2.3` or `1.2.3-rc.1`; a `v` prefix and build metadata (`+build`) are refused, and each ' +
        'of major, minor and patch has at most 10 digits. Unique in the package (409 ALREADY_EXISTS)',
    }),
    input_schema: Type.Object({}, { additionalProperties: true, description: inputSchemaDescription }),
    manifest: ManifestBody,
  },
  {
    additionalProperties: false,
    description: 'A new, immutable version of the package.',
    examples: [{
      semver: '1.2.0',
      input_schema: { type: 'object', properties: { greeting: { type: 'string', maxLength: 100, default: 'hello' } } },
      manifest: {
        routes: [{ route_key: 'web', protocol: 'http', service: { name: 'hello', port: 8080 } }],
        resources: [{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'hello' }, spec: { selector: { app: 'hello' }, ports: [{ port: 8080 }] } }],
      },
    }],
  },
);
export type CreateVersionBodyT = Static<typeof CreateVersionBody>;

export const PackageVersion = Type.Object(
  {
    id: Type.String({ description: 'pkv_ id' }),
    package_id: Type.String({ description: 'pkg_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    semver: Type.String({ description: 'the SemVer 2.0 version, unique in the package' }),
    prerelease: Type.Boolean({ description: 'true for a prerelease (`1.0.0-rc.1`): never the package\'s latest_version' }),
    input_schema: Type.Object({}, { additionalProperties: true, description: 'the JSON Schema (2020-12) install values must match' }),
    manifest: Type.Object(
      {
        routes: Type.Array(
          Type.Object(
            {
              route_key: Type.String({ description: routeKeyDescription }),
              protocol: RouteProtocol,
              service: Type.Optional(Type.Object(
                { name: Type.String({ description: 'Service name' }), port: Type.Integer({ description: 'Service port' }) },
                { description: 'the Service and port behind the route' },
              )),
            },
            { description: 'a route the package exposes' },
          ),
          { description: 'the routes, protocol defaulted' },
        ),
        resources: Type.Array(Type.Object({}, { additionalProperties: true, description: 'a Kubernetes object, before rendering' }), {
          description: 'the Kubernetes objects, as published (placeholders not substituted)',
        }),
      },
      { description: 'the manifest as stored' },
    ),
    created_at: Type.Integer({ minimum: 0, description: 'Unix seconds' }),
  },
  {
    $id: 'PackageVersion',
    description: 'An immutable version of a package: no etag, never changed or deleted on its own.',
    examples: [{
      id: 'pkv_01kaxq3m7y0c9v8t6r5p4n3m2k', package_id: 'pkg_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', semver: '1.2.0', prerelease: false,
      input_schema: { type: 'object', properties: { greeting: { type: 'string', maxLength: 100, default: 'hello' } } },
      manifest: { routes: [{ route_key: 'web', protocol: 'http', service: { name: 'hello', port: 8080 } }], resources: [{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'hello' }, spec: { selector: { app: 'hello' }, ports: [{ port: 8080 }] } }] }, created_at: 1767225700,
    }],
  },
);
export type PackageVersionT = Static<typeof PackageVersion>;
