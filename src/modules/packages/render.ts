// Renders a package version's manifest for one install: placeholders in the strings of its
// resources are replaced by install values and the install's context. Pure and deterministic: the
// same manifest, values and ids give the same objects and the same content hash.
//
// Substitution rules:
//   - Only string values of `resources` are scanned (object keys, `routes` and the `apiVersion` and
//     `kind` of each object are never substituted; publish refuses placeholders in the latter two).
//   - A string that is exactly one placeholder takes the value's JSON type: `"{{ values.replicas }}"`
//     becomes 3, `"{{ values.labels }}"` an object.
//   - Otherwise each placeholder is interpolated as text: strings as they are, other values as JSON.
//   - A substituted value is never scanned again, so values cannot inject placeholders.
//   - `{{ values.a.b }}` naming nothing in the values fails the render (RenderError).
//   - The output is bounded (RenderLimits): a manifest repeating a placeholder thousands of times
//     could otherwise multiply a large value into hundreds of megabytes. Substituted text is
//     counted while it is produced, so the render stops at the bound instead of building it first.
//   - Values that reference secrets (`{"$secret": ...}`) are never substituted: `{{ values.a.b }}`
//     reaching one fails the render. `{{ secret.name }}` is the install's Kubernetes Secret and
//     `{{ secret.key.a.b }}` the key in it holding the value referenced at values.a.b, for a
//     `secretKeyRef` (env) or a secret volume. The render holds these names, never a value.
import { createHash } from 'node:crypto';
import type { KubernetesObject, RouteSpec } from '../../drivers/cluster/driver.js';
import type { Json } from '../../jobs/workflows.js';
import { PLACEHOLDER, parsePlaceholder, resourceViolations, type StoredManifest } from './package-manifest.js';
import { containsSecretRef, INSTALL_SECRET_NAME, isSecretRef, refKey } from '../secrets/secret-refs.js';

/** A render that cannot succeed with these values: not retryable, the step fails with its message. */
export class RenderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RenderError';
  }
}

export interface RenderContext {
  installId: string;
  renderId: string;
  /** the install's namespace on its cluster (installNamespace(installId)) */
  namespace: string;
}

export interface RenderedManifest {
  routes: RouteSpec[];
  resources: KubernetesObject[];
  /** sha256 hex of the canonical JSON of {routes, resources}, with `{{ render.id }}` left unsubstituted */
  contentHash: string;
}

/** JSON with object keys sorted, so equal content always hashes the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o).sort().filter((k) => o[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** Bounds of one render (config: SVC_RENDER_MAX_BYTES, SVC_RENDER_MAX_RESOURCE_BYTES). */
export interface RenderLimits {
  /** all rendered resources together, as JSON */
  maxBytes: number;
  /** one rendered resource, as JSON */
  maxResourceBytes: number;
}

export const DEFAULT_RENDER_LIMITS: RenderLimits = { maxBytes: 4 * 1024 * 1024, maxResourceBytes: 1024 * 1024 };

/** Characters substituted so far in one resource; a lower bound of its size, checked as it grows. */
class Budget {
  used = 0;
  constructor(private readonly limit: number, private readonly where: string) {}
  add(n: number): void {
    this.used += n;
    if (this.used > this.limit) throw new RenderError(`rendered ${this.where} is larger than ${this.limit} bytes (SVC_RENDER_MAX_RESOURCE_BYTES)`);
  }
}

type Lookup = (expression: string, where: string) => Json;

function valueAt(values: Record<string, Json>, path: string[], expression: string, where: string): Json {
  let node: Json | undefined = values;
  for (const key of path) {
    node = node !== null && typeof node === 'object' && Object.hasOwn(node, key) ? (node as Record<string, Json>)[key] : undefined;
    if (node === undefined) throw new RenderError(`{{ ${expression} }} at ${where}: the values have nothing at "${path.join('.')}"`);
  }
  return node as Json;
}

function lookupFor(values: Record<string, Json>, ctx: RenderContext, renderId: string | null): Lookup {
  return (expression, where) => {
    const placeholder = parsePlaceholder(expression);
    if (!placeholder) throw new RenderError(`unknown placeholder "{{ ${expression} }}" at ${where}`);
    switch (placeholder.kind) {
      case 'install.id': return ctx.installId;
      case 'install.namespace': return ctx.namespace;
      // null: the hashing pass keeps the placeholder as written.
      case 'render.id': return renderId ?? `{{ ${expression} }}`;
      case 'secret.name': return INSTALL_SECRET_NAME;
      case 'values': {
        const node = valueAt(values, placeholder.path, expression, where);
        if (containsSecretRef(node)) {
          throw new RenderError(`{{ ${expression} }} at ${where}: the values hold a secret reference there, which is never written into objects; ` +
            `refer to it with {{ secret.name }} and {{ secret.key.<path> }} (a secretKeyRef)`);
        }
        return node;
      }
      case 'secret.key': {
        if (!isSecretRef(valueAt(values, placeholder.path, expression, where))) {
          throw new RenderError(`{{ ${expression} }} at ${where}: values.${placeholder.path.join('.')} is not a secret reference`);
        }
        return refKey(placeholder.path);
      }
    }
  };
}

function substitute(value: unknown, lookup: Lookup, where: string, budget: Budget): unknown {
  if (typeof value === 'string') {
    const whole = /^\{\{\s*([^{}]*?)\s*\}\}$/.exec(value);
    if (whole) {
      const v = lookup(whole[1]!, where);
      budget.add(typeof v === 'string' ? v.length : v !== null && typeof v === 'object' ? JSON.stringify(v).length : 8);
      return structuredClone(v);
    }
    budget.add(value.length);
    return value.replace(PLACEHOLDER, (_m, expression: string) => {
      const v = lookup(expression, where);
      const text = typeof v === 'string' ? v : JSON.stringify(v);
      budget.add(text.length);
      return text;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substitute(v, lookup, `${where}.${i}`, budget));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substitute(v, lookup, `${where}.${k}`, budget);
    return out;
  }
  return value;
}

function renderResources(manifest: StoredManifest, lookup: Lookup, limits: RenderLimits): KubernetesObject[] {
  let total = 0;
  return manifest.resources.map((resource, i) => {
    const where = `resources.${i}`;
    const rendered = substitute(resource, lookup, where, new Budget(limits.maxResourceBytes, where));
    // A value may have replaced a name with a number, say: the output must still be a valid object.
    const problem = resourceViolations(rendered, where)[0];
    if (problem) throw new RenderError(`rendered ${problem.field} ${problem.description}`);
    const bytes = Buffer.byteLength(JSON.stringify(rendered));
    if (bytes > limits.maxResourceBytes) throw new RenderError(`rendered ${where} is ${bytes} bytes; at most ${limits.maxResourceBytes} (SVC_RENDER_MAX_RESOURCE_BYTES)`);
    total += bytes;
    if (total > limits.maxBytes) throw new RenderError(`the rendered resources are larger than ${limits.maxBytes} bytes (SVC_RENDER_MAX_BYTES) at ${where}`);
    return rendered as KubernetesObject;
  });
}

/**
 * Renders a stored manifest (the `manifest` column of a package version) with the install's values
 * (defaults already applied by validateValues) and context. Throws RenderError when a placeholder
 * names something the values do not have, the result is not a valid namespaced object, or the
 * result is larger than `limits`.
 */
export function renderManifest(
  manifestJson: string,
  values: Record<string, Json>,
  ctx: RenderContext,
  limits: RenderLimits = DEFAULT_RENDER_LIMITS,
): RenderedManifest {
  const manifest = JSON.parse(manifestJson) as StoredManifest;
  const routes: RouteSpec[] = manifest.routes.map((r) => ({ ...r, protocol: r.protocol ?? 'http' }));
  // Hash the output with the render id left as a placeholder: two renders of the same content
  // (a redeploy with the same values) hash the same although their ids differ.
  const forHash = renderResources(manifest, lookupFor(values, ctx, null), limits);
  const contentHash = createHash('sha256').update(canonicalJson({ routes, resources: forHash })).digest('hex');
  const resources = renderResources(manifest, lookupFor(values, ctx, ctx.renderId), limits);
  return { routes, resources, contentHash };
}
