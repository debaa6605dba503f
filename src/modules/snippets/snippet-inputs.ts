// Typed inputs of a snippet (API.md 8.3): the declarations are checked when a snippet is written,
// and every run's values against them (400 with one field violation per problem).
import type { JsonValue } from '../../sandbox/index.js';
import { invalidArgument, type FieldViolation } from '../../platform/errors.js';
import { isId, type IdKind } from '../../platform/ids.js';
import { MAX_TEXT_INPUT_LENGTH, type InputDeclarationT, type InputResourceType } from './snippets.schemas.js';

const RESOURCE_ID_KINDS: Record<InputResourceType, IdKind> = {
  install: 'install',
  cluster: 'cluster',
  package: 'package',
  snippet: 'snippet',
  operation: 'operation',
  preview_hostname: 'previewHostname',
  api_token: 'apiToken',
};

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Why `value` is not a valid value of the declared input, or null when it is. */
function valueProblem(decl: InputDeclarationT, value: unknown): string | null {
  switch (decl.kind) {
    case 'text':
      return typeof value === 'string' && value.length <= MAX_TEXT_INPUT_LENGTH ? null : `must be a string of at most ${MAX_TEXT_INPUT_LENGTH} characters`;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return 'must be a finite number';
      if (decl.min !== undefined && value < decl.min) return `must be at least ${decl.min}`;
      if (decl.max !== undefined && value > decl.max) return `must be at most ${decl.max}`;
      return null;
    case 'boolean':
      return typeof value === 'boolean' ? null : 'must be true or false';
    case 'enum':
      return typeof value === 'string' && (decl.options ?? []).includes(value) ? null : `must be one of ${(decl.options ?? []).join(', ')}`;
    case 'time_range': {
      const ok = isPlainObject(value) && Object.keys(value).every((k) => k === 'start' || k === 'end') &&
        Number.isSafeInteger(value.start) && Number.isSafeInteger(value.end) && (value.start as number) >= 0 && (value.start as number) <= (value.end as number);
      return ok ? null : 'must be {start, end}: Unix seconds, start <= end';
    }
    case 'resource': {
      const type = decl.resource_type!;
      return typeof value === 'string' && isId(RESOURCE_ID_KINDS[type], value) ? null : `must be the id of a ${type}`;
    }
  }
}

/** Checks the declarations of a snippet (keys unique, kind-specific fields, defaults valid); 400 otherwise. */
export function checkDeclarations(decls: InputDeclarationT[], field: string): void {
  const violations: FieldViolation[] = [];
  const keys = new Set<string>();
  decls.forEach((decl, i) => {
    const at = `${field}[${i}]`;
    if (keys.has(decl.key)) violations.push({ field: `${at}.key`, description: `key ${decl.key} is declared twice` });
    keys.add(decl.key);
    if ((decl.kind === 'enum') !== (decl.options !== undefined)) {
      violations.push({ field: `${at}.options`, description: 'options are required with kind enum and refused with any other kind' });
    }
    if ((decl.kind === 'resource') !== (decl.resource_type !== undefined)) {
      violations.push({ field: `${at}.resource_type`, description: 'resource_type is required with kind resource and refused with any other kind' });
    }
    if (decl.kind !== 'number' && (decl.min !== undefined || decl.max !== undefined)) {
      violations.push({ field: `${at}.min`, description: 'min and max apply to kind number only' });
    } else if (decl.min !== undefined && decl.max !== undefined && decl.min > decl.max) {
      violations.push({ field: `${at}.min`, description: 'min is greater than max' });
    }
    if (decl.default !== undefined && violations.length === 0) {
      const problem = valueProblem(decl, decl.default);
      if (problem) violations.push({ field: `${at}.default`, description: `the default ${problem}` });
    }
  });
  if (violations.length) throw invalidArgument('the declared inputs are invalid', 'INVALID_INPUTS', violations);
}

/** The inputs of a run: the given values checked against the declarations, defaults filled in. */
export function resolveInputs(decls: InputDeclarationT[], given: Record<string, unknown>): Record<string, JsonValue> {
  const violations: FieldViolation[] = [];
  const declared = new Map(decls.map((d) => [d.key, d]));
  for (const key of Object.keys(given)) {
    if (!declared.has(key)) violations.push({ field: `body.inputs.${key.slice(0, 64)}`, description: 'the snippet declares no such input' });
  }
  const out: Record<string, JsonValue> = {};
  for (const decl of decls) {
    const value = Object.hasOwn(given, decl.key) ? given[decl.key] : decl.default;
    if (value === undefined) {
      if (decl.required) violations.push({ field: `body.inputs.${decl.key}`, description: 'this input is required' });
      continue;
    }
    const problem = valueProblem(decl, value);
    if (problem) violations.push({ field: `body.inputs.${decl.key}`, description: problem });
    else out[decl.key] = value as JsonValue;
  }
  if (violations.length) throw invalidArgument('the inputs do not match the snippet\'s declared inputs', 'INVALID_INPUTS', violations);
  return out;
}
