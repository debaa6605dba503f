// The placeholder grammar of package manifests (packages/package-manifest.ts). It sits here, in
// secrets, because secrets (compute, group 3) finds the secret references of a manifest by it and
// packages (delivery, group 4) is above it: the lower module holds what both use.

/**
 * `{{ values.a.b }}`, `{{ install.id }}`, `{{ install.namespace }}`, `{{ render.id }}`, and for
 * values that reference secrets `{{ secret.name }}` (the install's Kubernetes Secret) and
 * `{{ secret.key.a.b }}` (the key in it that holds the value referenced at values.a.b).
 */
export const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const VALUES_PATH = /^values(\.[A-Za-z0-9_-]+)+$/;
const SECRET_KEY_PATH = /^secret\.key(\.[A-Za-z0-9_-]+)+$/;
const CONTEXT_NAMES = new Set(['install.id', 'install.namespace', 'render.id', 'secret.name']);

export type Placeholder =
  | { kind: 'values' | 'secret.key'; path: string[] }
  | { kind: 'install.id' | 'install.namespace' | 'render.id' | 'secret.name' };

/** The placeholder an expression names; null when it names none of the known ones. */
export function parsePlaceholder(expression: string): Placeholder | null {
  if (VALUES_PATH.test(expression)) return { kind: 'values', path: expression.split('.').slice(1) };
  if (SECRET_KEY_PATH.test(expression)) return { kind: 'secret.key', path: expression.split('.').slice(2) };
  if (CONTEXT_NAMES.has(expression)) return { kind: expression as 'install.id' | 'install.namespace' | 'render.id' | 'secret.name' };
  return null;
}
