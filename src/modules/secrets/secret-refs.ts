// Secret references in install values: `{"$secret": "sec_...", "version": "latest" | 3 | "prod"}`
// where the input schema expects a string. The install row and its renders keep the reference
// only; a deploy resolves it to a version (render step), opens the value in the worker and hands
// it to the cluster driver (apply step), which puts it in the install's Kubernetes Secret.
//
// Who may reference: only admins and owners (the role `:access` needs), and any create or update
// of an install whose values hold a reference needs it, also when the references were set before.
// A deploy reveals the values to whatever the package version runs, and members may publish
// package versions and deploy them: were a member allowed to write, or merely keep, a reference,
// a manifest of theirs could ship the value anywhere.
import { inTransaction, type Executor } from '../../db/database.js';
import type { Json } from '../../jobs/workflows.js';
import { permissionDenied, ApiError, type FieldViolation } from '../../platform/errors.js';
import { roleAtLeast, type WorkspaceScope } from '../../platform/auth.js';
import { isId } from '../../platform/ids.js';
import type { Keyring } from '../../platform/keyring.js';
import { actorOfId, recordAuditEvent } from '../audit/audit.js';
import { assertReadable, openVersionValue, resolveVersion } from './secret-values.js';
import * as repo from './secrets.repo.js';
import { ALIAS_PATTERN } from './secrets.schemas.js';
import { PLACEHOLDER, parsePlaceholder } from './manifest-placeholders.js';

/** The Kubernetes Secret, in the install's namespace, that holds the referenced values. */
export const INSTALL_SECRET_NAME = 'svc-secrets';

export type RefVersion = 'latest' | number | string;

export interface FoundRef {
  /** where in the values: ['db', 'password'] */
  path: string[];
  secretId: string;
  version: RefVersion;
}

/** A reference as a render records it: the version it resolved to, never the value. */
export interface ResolvedRef {
  /** the key in the install's Secret: the values path joined with dots */
  key: string;
  secret_id: string;
  version_id: string;
  version_number: number;
}

export interface RenderSecret {
  name: string;
  refs: ResolvedRef[];
}

const ALIAS = new RegExp(ALIAS_PATTERN);
const isObject = (v: unknown): v is Record<string, Json> => !!v && typeof v === 'object' && !Array.isArray(v);

/** True for an object that is a secret reference (it has a `$secret` member). */
export const isSecretRef = (v: unknown): boolean => isObject(v) && Object.hasOwn(v, '$secret');

/** True when the value is or contains a secret reference. */
export function containsSecretRef(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length) {
    const node = stack.pop();
    if (isSecretRef(node)) return true;
    // One push per child: spreading a wide object's values as arguments overflows the stack.
    if (node && typeof node === 'object') for (const child of Object.values(node)) stack.push(child);
  }
  return false;
}

export const refKey = (path: string[]) => path.join('.');

/**
 * Every secret reference in the values, in a stable order; 400 (reason SECRET_REF_INVALID) naming
 * the field of a malformed one. Keys of referenced paths must be Secret keys ([-._a-zA-Z0-9]).
 */
export function findSecretRefs(values: Record<string, Json>, field: string): FoundRef[] {
  const found: FoundRef[] = [];
  const violations: FieldViolation[] = [];
  // Each entry links to its parent: a path is spelled only where a reference is found. (Copying
  // the path into every entry cost depth squared: seconds of CPU on deeply nested values.)
  type Entry = { node: Json; key: string; parent: Entry | null };
  const pathOf = (entry: Entry): string[] => {
    const keys: string[] = [];
    for (let e: Entry | null = entry; e?.parent; e = e.parent) keys.push(e.key);
    return keys.reverse();
  };
  const stack: Entry[] = [{ node: values, key: '', parent: null }];
  while (stack.length) {
    const entry = stack.pop()!;
    const node = entry.node;
    if (isSecretRef(node)) {
      const path = pathOf(entry);
      const ref = node as Record<string, Json>;
      const where = [field, ...path].join('.');
      const id = ref.$secret;
      const version = ref.version ?? 'latest';
      const extra = Object.keys(ref).filter((k) => k !== '$secret' && k !== 'version');
      const versionOk = (typeof version === 'number' && Number.isSafeInteger(version) && version >= 1) || (typeof version === 'string' && (version === 'latest' || ALIAS.test(version)));
      if (typeof id !== 'string' || !isId('secret', id) || extra.length || !versionOk) {
        violations.push({ field: where, description: 'a secret reference is {"$secret": "sec_...", "version": "latest" | a version number | an alias}, and nothing else' });
      } else if (path.length === 0 || path.some((p) => !/^[-_a-zA-Z0-9]+$/.test(p))) {
        violations.push({ field: where, description: 'a secret reference must sit under keys of [-_a-zA-Z0-9]' });
      } else {
        found.push({ path, secretId: id, version: version as RefVersion });
      }
      continue;
    }
    if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) stack.push({ node: v, key: k, parent: entry });
    }
  }
  if (violations.length) {
    throw new ApiError('INVALID_ARGUMENT', `${violations[0]!.field}: ${violations[0]!.description}`, { reason: 'SECRET_REF_INVALID', fieldViolations: violations });
  }
  return found.sort((a, b) => refKey(a.path).localeCompare(refKey(b.path)));
}

/**
 * 400 when the package version's manifest writes a referenced value into an object as text
 * (`{{ values.x }}` on a reference, or on an object holding one): the render would refuse it, and
 * the caller learns now rather than from a failed deploy.
 */
export function assertRefsNotInlined(manifestJson: string, refs: FoundRef[], field: string): void {
  if (refs.length === 0) return;
  const { resources } = JSON.parse(manifestJson) as { resources: unknown[] };
  const inlined = new Map<string, string>();
  const stack: unknown[] = [resources];
  while (stack.length) {
    const node = stack.pop();
    if (typeof node === 'string') {
      for (const m of node.matchAll(PLACEHOLDER)) {
        const p = parsePlaceholder(m[1]!);
        if (p?.kind !== 'values') continue;
        for (const ref of refs) {
          const n = Math.min(p.path.length, ref.path.length);
          if (p.path.slice(0, n).join('.') === ref.path.slice(0, n).join('.')) inlined.set(refKey(ref.path), m[0]);
        }
      }
    } else if (node && typeof node === 'object') {
      stack.push(...Object.values(node));
    }
  }
  if (inlined.size === 0) return;
  const violations = [...inlined].map(([key, placeholder]) => ({
    field: `${field}.${key}`,
    description: `the package version writes ${placeholder} into its objects as text; a secret reference can only be used through {{ secret.name }} and {{ secret.key.${key} }}`,
  }));
  throw new ApiError('INVALID_ARGUMENT', `${violations[0]!.field}: ${violations[0]!.description}`, { reason: 'SECRET_REF_INVALID', fieldViolations: violations });
}

/**
 * Checks references when an install is created or updated: the caller is an admin or owner
 * (403), and each names a secret of the workspace that is active, with the version it names
 * enabled (400 SECRET_REF_INVALID naming the field otherwise).
 */
export async function checkSecretRefs(db: Executor, scope: WorkspaceScope, refs: FoundRef[], field: string): Promise<void> {
  if (refs.length === 0) return;
  if (!roleAtLeast(scope.role, 'admin')) {
    throw permissionDenied('values that reference secrets can be set or deployed by admins and owners only: a deploy hands the values to the package', 'SECRET_REF_FORBIDDEN');
  }
  const violations: FieldViolation[] = [];
  for (const ref of refs) {
    const where = [field, ...ref.path].join('.');
    const secret = await repo.findSecret(db, scope.workspaceId, ref.secretId);
    if (!secret) {
      violations.push({ field: where, description: `secret ${ref.secretId} not found in the workspace` });
      continue;
    }
    try {
      assertReadable(secret, await resolveVersion(db, secret, ref.version));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      violations.push({ field: where, description: `${ref.secretId} version ${ref.version}: ${err.message}` });
    }
  }
  if (violations.length) {
    throw new ApiError('INVALID_ARGUMENT', `${violations[0]!.field}: ${violations[0]!.description}`, { reason: 'SECRET_REF_INVALID', fieldViolations: violations });
  }
}

/** A failure of a deploy's secret resolution; its message names ids and versions, never a value. */
export class SecretRefError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretRefError';
  }
}

async function readableVersion(db: Executor, workspaceId: string, secretId: string, which: RefVersion) {
  const secret = await repo.findSecret(db, workspaceId, secretId);
  if (!secret) throw new SecretRefError(`secret ${secretId} no longer exists`);
  try {
    const version = await resolveVersion(db, secret, which);
    assertReadable(secret, version);
    return version;
  } catch (err) {
    if (err instanceof ApiError) throw new SecretRefError(`secret ${secretId} version ${which}: ${err.message}`);
    throw err;
  }
}

/** The render step: each reference resolved to the version it names now (metadata only). */
export async function resolveSecretRefs(db: Executor, workspaceId: string, refs: FoundRef[]): Promise<RenderSecret | null> {
  if (refs.length === 0) return null;
  const resolved: ResolvedRef[] = [];
  for (const ref of refs) {
    const v = await readableVersion(db, workspaceId, ref.secretId, ref.version);
    resolved.push({ key: refKey(ref.path), secret_id: ref.secretId, version_id: v.id, version_number: v.version_number });
  }
  return { name: INSTALL_SECRET_NAME, refs: resolved };
}

export interface DeployAccess {
  workspaceId: string;
  /** the actor id (usr_, tok_, oac_) that requested the deploy */
  requestedBy: string;
  installId: string;
  operationId: string;
  renderId: string;
}

/**
 * The apply step: opens each version a render resolved (still readable: a version disabled or
 * destroyed since fails the deploy) and records each read in the audit log, before the values
 * go to the driver. Returns the Secret's data, key -> value.
 */
export async function openSecretRefs(db: Executor, keyring: Keyring, secret: RenderSecret, access: DeployAccess): Promise<Record<string, string>> {
  const data: Record<string, string> = {};
  for (const ref of secret.refs) {
    const version = await readableVersion(db, access.workspaceId, ref.secret_id, ref.version_id);
    try {
      data[ref.key] = openVersionValue(keyring, version);
    } catch (err) {
      if (err instanceof ApiError) throw new SecretRefError(`secret ${ref.secret_id} version ${ref.version_number}: ${err.message}`);
      throw err;
    }
  }
  const ctx = { workspaceId: access.workspaceId, actor: actorOfId(access.requestedBy), requestId: null };
  await inTransaction(db, async (tx) => {
    for (const ref of secret.refs) {
      await recordAuditEvent(tx, ctx, {
        action: 'secret.version.access', resourceType: 'secret_version', resourceId: ref.version_id,
        metadata: {
          secret_id: ref.secret_id, version_number: String(ref.version_number), via: 'install.deploy',
          install_id: access.installId, operation_id: access.operationId, render_id: access.renderId,
        },
      });
    }
  });
  return data;
}
