// Installs (spec 2.2, endpoint 7; API.md section 6) and their renders.
import { Type, type Static, type TSchema } from 'typebox';
import { StringEnum, refTo } from '../../platform/http.js';
import { MAX_UNIX_SECONDS } from '../../platform/integer-bounds.js';
import { PageQuery } from '../../platform/pagination.js';

/** The operation types (metadata.type) of the install workflows. */
export const INSTALL_CREATE = 'install.create';
export const INSTALL_UPDATE = 'install.update';
export const INSTALL_DELETE = 'install.delete';

export const INSTALL_STATES = ['pending', 'rendering', 'syncing', 'healthy', 'degraded', 'failed', 'deleted'] as const;
export type InstallState = (typeof INSTALL_STATES)[number];

export const PIN_KINDS = ['latest', 'pinned'] as const;

export const InstallId = Type.String({ minLength: 1, maxLength: 55, description: 'install id (inst_...)' });
export const RenderId = Type.String({ minLength: 1, maxLength: 54, description: 'render id (rnd_...)' });

const Timestamp = (description: string) => Type.Integer({ minimum: 0, description: `${description} (Unix seconds)` });

/**
 * `type: [T, 'null']` rather than a union: one schema for fast-json-stringify (a union makes it
 * try each branch on every item of the hot list) and plain OpenAPI 3.1.
 */
function Nullable<T extends TSchema>(schema: T, description: string) {
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [(schema as unknown as { type: string }).type, 'null'], description });
}

export const PackageVersionPin = Type.Object(
  {
    kind: StringEnum(PIN_KINDS, {
      description: '`latest`: the highest released (non-prerelease) version when the install is created or updated; `pinned`: exactly `version`',
    }),
    version: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'the semver to install; required with kind pinned, refused with latest' })),
  },
  { additionalProperties: false, description: 'Which version of the package to install.' },
);
export type PackageVersionPinT = Static<typeof PackageVersionPin>;

export const UrlEntry = Type.Object({
  route_key: Type.String({ description: 'the route of the package manifest this URL serves' }),
  hostname: Type.String({ description: 'the hostname the preview router answers for' }),
  url: Type.String({ description: 'where the route is reachable' }),
  error: Type.String({ description: 'why the URL does not answer; empty when it does' }),
  updated_at: Timestamp('when the URL was last written'),
  last_observed_at: Timestamp('when the route was last seen published by a successful install operation'),
}, { description: 'One URL of the install: where a route of its current render is reachable, or why it is not' });
export type UrlEntryT = Static<typeof UrlEntry>;

const installProperties = {
  id: Type.String({ description: 'inst_ id' }),
  workspace_id: Type.String({ description: 'ws_ id' }),
  cluster_id: Type.String({ description: 'clu_ id of the cluster the install runs on' }),
  product_id: Type.String({ description: 'the installed product: the package id (pkg_), the same as package_id' }),
  package_id: Type.String({ description: 'pkg_ id' }),
  package_version_id: Type.String({
    description: 'pkv_ id of the version the install is set to (by its creation or last update); the running one is current_render_id\'s',
  }),
  semver: Type.String({ description: 'the semver of package_version_id' }),
  package_version_pin: PackageVersionPin,
  state: StringEnum(INSTALL_STATES, {
    description:
      'pending (accepted), rendering, syncing (applying to the cluster and waiting until healthy), healthy (the current render runs), ' +
      'degraded (an update failed; the previous render is still current), failed (no render ever became current), ' +
      'deleted (removed from the cluster; the install disappears right after)',
  }),
  reconciling: Type.Boolean({ description: 'true while an install operation (create, update, delete) acts on the install' }),
  current_render_id: Nullable(Type.String(), 'the render that runs (its URLs are published); null until one became healthy'),
  urls: Type.Array(UrlEntry, { description: 'one per route of the current render' }),
  html_url: Type.String({ format: 'uri', description: 'the dashboard view of the install' }),
  created_at: Timestamp('creation time'),
  updated_at: Timestamp('last change, also by operations'),
  etag: Type.String({ description: 'changes on every write, also on state changes made by operations; send it back in if-match' }),
};

const INSTALL_EXAMPLE = {
  id: 'inst_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', cluster_id: 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k', product_id: 'pkg_01kaxq3m7y0c9v8t6r5p4n3m2k', package_id: 'pkg_01kaxq3m7y0c9v8t6r5p4n3m2k', package_version_id: 'pkv_01kaxq3m7y0c9v8t6r5p4n3m2k', semver: '1.2.0',
  package_version_pin: { kind: 'latest' }, state: 'healthy', reconciling: false, current_render_id: 'rnd_01kaxq3m7y0c9v8t6r5p4n3m2k',
  urls: [{
    route_key: 'web', hostname: 'web--inst-01kaxq3m7y0c9v8t6r5p4n3m2k.preview.example.com', url: 'http://web--inst-01kaxq3m7y0c9v8t6r5p4n3m2k.preview.example.com',
    error: '', updated_at: 1767225800, last_observed_at: 1767225800,
  }],
  html_url: 'https://svc.example.com/installs/inst_01kaxq3m7y0c9v8t6r5p4n3m2k', created_at: 1767225760, updated_at: 1767225800, etag: '4',
};

export const Install = Type.Object(installProperties, {
  $id: 'Install',
  examples: [INSTALL_EXAMPLE],
  description: 'An install of a package version on a cluster: its state, package and version pin, current render, URLs and html_url.',
});
export type InstallT = Static<typeof Install>;

export const InstallDetail = Type.Object(
  {
    ...installProperties,
    values: Type.Object({}, { additionalProperties: true, description: 'the values the install is configured with, schema defaults applied' }),
  },
  { $id: 'InstallDetail', description: 'An install with its values.', examples: [{ ...INSTALL_EXAMPLE, values: { greeting: 'hello' } }] },
);
export type InstallDetailT = Static<typeof InstallDetail>;

const SECRET_REFS =
  ' A value may be a secret reference, `{"$secret": "sec_...", "version": "latest" | <number> | "<alias>"}` (version defaults to ' +
  '`latest`), where the input schema expects a string: the install and its renders keep the reference, and each deploy puts ' +
  'the value into the install\'s Kubernetes Secret (see the package version\'s manifest placeholders). Only admins and owners ' +
  'may set, or deploy with, values that reference secrets.';
const Values = (description: string) => Type.Object({}, { additionalProperties: true, description: `${description.replace(/\.?$/, '.')}${SECRET_REFS}` });

export const CreateInstallBody = Type.Object(
  {
    package_id: Type.String({ minLength: 1, maxLength: 54, description: 'pkg_ id of a package of the workspace' }),
    package_version_pin: PackageVersionPin,
    cluster_id: Type.String({ minLength: 1, maxLength: 54, description: 'clu_ id of an active cluster of the workspace' }),
    initial_values: Type.Optional(Values('values for the version\'s input_schema (JSON Schema); its defaults fill what is left out; default {}')),
  },
  { additionalProperties: false, description: 'Installs a package version on a cluster.', examples: [{ package_id: 'pkg_01kaxq3m7y0c9v8t6r5p4n3m2k', package_version_pin: { kind: 'latest' }, cluster_id: 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k', initial_values: { greeting: 'hi' } }] },
);
export type CreateInstallBodyT = Static<typeof CreateInstallBody>;

export const PatchInstallBody = Type.Object(
  {
    package_version_pin: Type.Optional(PackageVersionPin),
    values: Type.Optional(Values('replaces the values as a whole (no merge); left out: the current values, validated again against the version')),
  },
  { additionalProperties: false, minProperties: 1, description: 'What to change; the install is rendered and deployed again.', examples: [{ package_version_pin: { kind: 'pinned', version: '1.2.0' }, values: { greeting: 'hello again' } }] },
);
export type PatchInstallBodyT = Static<typeof PatchInstallBody>;

export const ListInstallsQuery = Type.Object(
  {
    ...PageQuery,
    cluster_id: Type.Optional(Type.String({ minLength: 1, maxLength: 54, description: 'only installs on this cluster (clu_ id)' })),
    package_id: Type.Optional(Type.String({ minLength: 1, maxLength: 54, description: 'only installs of this package (pkg_ id)' })),
    state: Type.Optional(StringEnum(INSTALL_STATES, { description: 'only installs in this state, e.g. `degraded` or `healthy`' })),
  },
  { additionalProperties: false },
);
export type ListInstallsQueryT = Static<typeof ListInstallsQuery>;

const renderProperties = {
  id: Type.String({ description: 'rnd_ id' }),
  install_id: Type.String({ description: 'inst_ id' }),
  workspace_id: Type.String({ description: 'ws_ id' }),
  package_version_id: Type.String({ description: 'pkv_ id of the version rendered' }),
  semver: Type.String({ description: 'its semver' }),
  content_hash: Type.String({ description: 'sha256 (hex) of the rendered routes and objects; equal for equal inputs, whatever the render id' }),
  current: Type.Boolean({ description: 'true for the install\'s current render' }),
  created_at: Timestamp('when it was rendered'),
  replaced_at: Nullable(Type.Integer({ minimum: 0 }), 'when another render became current (Unix seconds); null while current or if it never became current'),
};

const RENDER_EXAMPLE = {
  id: 'rnd_01kaxq3m7y0c9v8t6r5p4n3m2k', install_id: 'inst_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', package_version_id: 'pkv_01kaxq3m7y0c9v8t6r5p4n3m2k', semver: '1.2.0',
  content_hash: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08', current: true, created_at: 1767225770, replaced_at: null,
};
export const Render = Type.Object(renderProperties, {
  $id: 'InstallRender',
  description: 'One render of an install (list item: without the manifest).',
  examples: [RENDER_EXAMPLE],
});
export type RenderT = Static<typeof Render>;

export const RenderDetail = Type.Object(
  {
    ...renderProperties,
    manifest: Type.Object(
      {
        routes: Type.Array(Type.Object({}, { additionalProperties: true }), { description: 'the routes: route_key, protocol, service' }),
        resources: Type.Array(Type.Object({}, { additionalProperties: true }), { description: 'the Kubernetes objects applied, placeholders substituted' }),
        secret: Type.Optional(Type.Object(
          {
            name: Type.String({ description: 'the Kubernetes Secret applied in the install\'s namespace ({{ secret.name }})' }),
            refs: Type.Array(Type.Object({
              key: Type.String({ description: 'the key in the Secret ({{ secret.key.<path> }}): the values path, dotted' }),
              secret_id: Type.String({ description: 'sec_ id' }),
              version_id: Type.String({ description: 'secv_ id of the version the reference named when this render was made' }),
              version_number: Type.Integer({ description: 'its number' }),
            }), { description: 'one per secret reference of the values' }),
          },
          { description: 'present when the values reference secrets: which version each reference resolved to. Never a value' },
        )),
      },
      { description: 'the manifest as rendered with the install\'s values and ids' },
    ),
  },
  {
    $id: 'InstallRenderDetail',
    description: 'One render of an install with its rendered manifest.',
    examples: [{ ...RENDER_EXAMPLE, manifest: { routes: [{ route_key: 'web', protocol: 'http', service: { name: 'hello', port: 8080 } }], resources: [] } }],
  },
);
export type RenderDetailT = Static<typeof RenderDetail>;

/** GET /v1/installs/{id}/logs (issue 36) */
export const LOG_TAIL_MAX = 5000;
export const LOG_TAIL_DEFAULT = 200;
export const InstallLogsQuery = Type.Object(
  {
    container: Type.Optional(Type.String({
      minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      description: 'only the containers of this exact name (a DNS-1123 label, as Kubernetes names containers)',
    })),
    since: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_UNIX_SECONDS, description: 'only lines written at or after this Unix time (seconds)' })),
    tail: Type.Optional(Type.Integer({
      minimum: 1, maximum: LOG_TAIL_MAX, default: LOG_TAIL_DEFAULT,
      description: `the last N lines of each pod container, as kubectl's --tail (1-${LOG_TAIL_MAX}, default ${LOG_TAIL_DEFAULT})`,
    })),
    follow: Type.Optional(Type.Boolean({ default: false, description: 'true: a Server-Sent Events stream that goes on with new lines as they are written' })),
  },
  { additionalProperties: false },
);
export type InstallLogsQueryT = Static<typeof InstallLogsQuery>;

export const InstallLogLine = Type.Object(
  {
    time: Type.Integer({ minimum: 0, description: 'when it was written (Unix seconds, the timestamp\'s whole seconds)' }),
    timestamp: Type.String({ description: 'when it was written, RFC 3339 as the cluster gave it (Kubernetes: up to nanoseconds, e.g. 2026-12-07T23:59:01.123456789Z)' }),
    pod: Type.String({ description: 'the pod (the local cluster: a simulated pod, or svc-local-cluster for its own lines)' }),
    container: Type.String({ description: 'the container in the pod' }),
    line: Type.String({ description: 'the text, without its newline; a line over 16384 bytes is cut and ends with " [... cut: <its size> bytes]"' }),
  },
  {
    $id: 'InstallLogLine', description: 'One log line of a pod container',
    examples: [{ time: 1765151941, timestamp: '2026-12-07T23:59:01.123456789Z', pod: 'web-5d8f7c9b6d-x2k4q', container: 'web', line: 'listening on :8080' }],
  },
);
export type InstallLogLineT = Static<typeof InstallLogLine>;

export const InstallLogs = Type.Object(
  {
    items: Type.Array(refTo(InstallLogLine), { description: 'the lines, oldest first' }),
    truncated: Type.Boolean({
      description: 'true when lines were left out: the install has more than 20 pod containers (the first 20 by pod and container name are read), ' +
        'or the lines went past the response\'s bounds (10,000 lines, 4 MiB of text: the newest are kept)',
    }),
  },
  {
    $id: 'InstallLogs', description: 'The logs of an install\'s pods',
    examples: [{
      items: [
        { time: 1765151941, timestamp: '2026-12-07T23:59:01.123456789Z', pod: 'web-5d8f7c9b6d-x2k4q', container: 'web', line: 'listening on :8080' },
        { time: 1765151942, timestamp: '2026-12-07T23:59:02.5Z', pod: 'web-5d8f7c9b6d-h7n2m', container: 'web', line: 'GET /healthz 200 0.4ms' },
      ],
      truncated: false,
    }],
  },
);
export type InstallLogsT = Static<typeof InstallLogs>;
