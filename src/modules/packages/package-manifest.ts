// The manifest of a package version: the routes it exposes and the Kubernetes objects it deploys
// (namespaced only: each install gets its own namespace, set by the driver). Checked at publish,
// and each rendered object again after substitution (render.ts), with the same rules.
import type { KubernetesObject, RouteSpec } from '../../drivers/cluster/driver.js';
import { ApiError, type FieldViolation } from '../../platform/errors.js';
import { PLACEHOLDER, parsePlaceholder } from '../secrets/manifest-placeholders.js';

export const ROUTE_KEY_PATTERN = '^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$';
export const ROUTE_PROTOCOLS = ['http', 'websocket', 'grpc'] as const;
export const MAX_ROUTES = 20;
export const MAX_RESOURCES = 100;

/**
 * Kinds that exist outside namespaces: an install may not create them (it would reach beyond its
 * namespace, into what other installs and tenants share). Custom cluster-scoped kinds cannot be
 * known here; the API server refuses to apply them into a namespace.
 */
export const CLUSTER_SCOPED_KINDS = new Set([
  'Namespace', 'Node', 'PersistentVolume', 'StorageClass', 'VolumeAttachment', 'CSIDriver', 'CSINode',
  'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition', 'APIService', 'PriorityClass', 'RuntimeClass',
  'IngressClass', 'GatewayClass', 'ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration',
  'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding',
  'CertificateSigningRequest', 'ClusterTrustBundle', 'FlowSchema', 'PriorityLevelConfiguration', 'PodSecurityPolicy',
  'ComponentStatus', 'TokenReview', 'SubjectAccessReview', 'SelfSubjectAccessReview', 'SelfSubjectRulesReview',
  'SelfSubjectReview', 'IPAddress', 'ServiceCIDR', 'DeviceClass', 'ResourceSlice', 'StorageVersionMigration', 'ClusterIssuer',
]);

// The placeholder grammar lives with secrets (below packages), which finds secret references in manifests by it.
export { PLACEHOLDER, parsePlaceholder, type Placeholder } from '../secrets/manifest-placeholders.js';

/** A manifest as stored: routes with their protocol defaulted, resources as published. */
export interface StoredManifest {
  routes: RouteSpec[];
  resources: KubernetesObject[];
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Nesting of objects and arrays allowed in one Kubernetes object (real ones stay far below it). */
export const MAX_RESOURCE_DEPTH = 64;

/** Whether objects and arrays nest deeper than `limit`. Iterative: hostile nesting cannot overflow the stack before it is refused. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (!node || typeof node !== 'object') continue;
    if (depth >= limit) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

/** The structural rules of one Kubernetes object (published or rendered). */
export function resourceViolations(resource: unknown, field: string): FieldViolation[] {
  if (!isObject(resource)) return [{ field, description: 'must be a Kubernetes object' }];
  const out: FieldViolation[] = [];
  const { apiVersion, kind, metadata } = resource;
  if (typeof apiVersion !== 'string' || apiVersion.length < 1 || apiVersion.length > 253) {
    out.push({ field: `${field}.apiVersion`, description: 'must be a string of 1-253 characters' });
  }
  if (typeof kind !== 'string' || !/^[A-Za-z][A-Za-z0-9]{0,62}$/.test(kind)) {
    out.push({ field: `${field}.kind`, description: 'must be a Kubernetes kind (a letter, then letters and digits, at most 63)' });
  } else if (CLUSTER_SCOPED_KINDS.has(kind)) {
    out.push({ field: `${field}.kind`, description: `${kind} is cluster-scoped; an install may only create namespaced objects` });
  }
  if (!isObject(metadata)) {
    out.push({ field: `${field}.metadata`, description: 'must be an object with a name' });
    return out;
  }
  if (typeof metadata.name !== 'string' || metadata.name.length < 1 || metadata.name.length > 253) {
    out.push({ field: `${field}.metadata.name`, description: 'must be a string of 1-253 characters' });
  }
  if ('namespace' in metadata) {
    out.push({ field: `${field}.metadata.namespace`, description: 'must not be set: every object goes into the install\'s own namespace' });
  }
  if ('generateName' in metadata) {
    out.push({ field: `${field}.metadata.generateName`, description: 'must not be set: objects are applied by name, so a redeploy updates them' });
  }
  return out;
}

/** Every placeholder of every string under `value` must be a known one. */
function placeholderViolations(value: unknown, field: string, out: FieldViolation[]): void {
  if (typeof value === 'string') {
    for (const m of value.matchAll(PLACEHOLDER)) {
      if (!parsePlaceholder(m[1]!)) {
        out.push({ field, description: `unknown placeholder "${m[0].slice(0, 80)}"; use {{ values.<path> }}, {{ install.id }}, {{ install.namespace }}, {{ render.id }}, {{ secret.name }} or {{ secret.key.<path> }}` });
      }
    }
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => placeholderViolations(v, `${field}.${i}`, out));
  } else if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) placeholderViolations(v, `${field}.${k}`, out);
  }
}

/** Checks a published manifest; 400 INVALID_ARGUMENT (reason MANIFEST_INVALID) listing every problem. */
/** A manifest as published: protocols may be omitted. */
export interface PublishedManifest {
  routes: (Omit<RouteSpec, 'protocol'> & { protocol?: RouteSpec['protocol'] })[];
  resources?: unknown[];
}

export function checkManifest(manifest: PublishedManifest): StoredManifest {
  const violations: FieldViolation[] = [];
  const seen = new Set<string>();
  manifest.routes.forEach((route, i) => {
    if (seen.has(route.route_key)) {
      violations.push({ field: `body.manifest.routes.${i}.route_key`, description: `route_key "${route.route_key}" appears more than once` });
    }
    seen.add(route.route_key);
  });
  const resources = manifest.resources ?? [];
  const names = new Set<string>();
  resources.forEach((resource, i) => {
    const field = `body.manifest.resources.${i}`;
    if (nestsDeeperThan(resource, MAX_RESOURCE_DEPTH)) {
      violations.push({ field, description: `nests objects and arrays deeper than ${MAX_RESOURCE_DEPTH} levels` });
      return;
    }
    const problems = resourceViolations(resource, field);
    violations.push(...problems);
    if (problems.length) return;
    const r = resource as KubernetesObject;
    for (const key of ['apiVersion', 'kind'] as const) {
      if (/\{\{/.test(r[key] as string)) violations.push({ field: `${field}.${key}`, description: 'must not contain placeholders' });
    }
    const identity = `${r.apiVersion}/${r.kind}/${r.metadata.name}`;
    if (names.has(identity)) violations.push({ field: `${field}.metadata.name`, description: `${r.kind} "${r.metadata.name}" appears more than once` });
    names.add(identity);
    placeholderViolations(resource, field, violations);
  });
  // A route reaches its workload through a Service of the manifest (by its literal name: a
  // route's service name holds no placeholder), which the driver's route object names.
  const services = new Set(resources.filter((r): r is KubernetesObject => isObject(r) && r.apiVersion === 'v1' && r.kind === 'Service' && isObject(r.metadata))
    .map((r) => r.metadata.name));
  manifest.routes.forEach((route, i) => {
    if (route.service && !services.has(route.service.name)) {
      violations.push({
        field: `body.manifest.routes.${i}.service.name`,
        description: `names no Service of the manifest: add a Service (apiVersion v1) named "${route.service.name}" to resources, or name one that is there`,
      });
    }
  });
  if (violations.length) {
    throw new ApiError('INVALID_ARGUMENT', `manifest is invalid: ${violations[0]!.field} ${violations[0]!.description}`, {
      reason: 'MANIFEST_INVALID',
      fieldViolations: violations.slice(0, 50),
    });
  }
  return {
    routes: manifest.routes.map((r) => ({ route_key: r.route_key, protocol: r.protocol ?? 'http', ...(r.service ? { service: r.service } : {}) })),
    resources: resources as KubernetesObject[],
  };
}
