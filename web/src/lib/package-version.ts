// The form that publishes a package version: three texts (semver, input schema, manifest), the
// two JSON ones parsed in the browser before anything is sent, and the API's field violations
// placed at the text they concern. Kept apart from the page so it is unit-tested without a browser.
// '.js': the unit tests import this file under the server's NodeNext settings, which take no '.ts' paths.
import { parseJson } from './schema-form.js';

export type VersionField = 'semver' | 'input_schema' | 'manifest';
export type VersionTexts = Record<VersionField, string>;
export type VersionErrors = Partial<Record<VersionField, string>>;

/** What a new version's text areas start with: a working example to edit, as the README's quick start has. */
export const STARTER: VersionTexts = {
  semver: '1.0.0',
  input_schema: JSON.stringify(
    { type: 'object', properties: { replicas: { type: 'integer', minimum: 1, maximum: 10, default: 1, description: 'how many copies run' } } },
    null,
    2,
  ),
  manifest: JSON.stringify(
    {
      routes: [{ route_key: 'web' }],
      resources: [{ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: '{{ values.replicas }}' } }],
    },
    null,
    2,
  ),
};

export interface VersionBody {
  semver: string;
  input_schema: Record<string, unknown>;
  manifest: { routes: unknown[]; resources?: unknown[] };
}

function objectOf(text: string): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  if (text.trim() === '') return { ok: false, error: 'required' };
  const parsed = parseJson(text);
  if (!parsed.ok) return parsed;
  const v = parsed.value;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { ok: false, error: 'must be a JSON object ({ ... })' };
  return { ok: true, value: v as Record<string, unknown> };
}

/** The request body the texts stand for, or why each text cannot be sent (nothing is sent then). */
export function parseVersionForm(texts: VersionTexts): { ok: true; body: VersionBody } | { ok: false; errors: VersionErrors } {
  const errors: VersionErrors = {};
  const semver = texts.semver.trim();
  if (!semver) errors.semver = 'required';
  const schema = objectOf(texts.input_schema);
  if (!schema.ok) errors.input_schema = schema.error;
  const manifest = objectOf(texts.manifest);
  if (!manifest.ok) errors.manifest = manifest.error;
  if (!schema.ok || !manifest.ok || errors.semver) return { ok: false, errors };
  return { ok: true, body: { semver, input_schema: schema.value, manifest: manifest.value as unknown as VersionBody['manifest'] } };
}

const FIELD = /^body\.(semver|input_schema|manifest)(?:[./](.+))?$/;

/**
 * The API's violations by the text area they concern: `body.manifest.routes.0.route_key` goes to
 * the manifest as "routes.0.route_key: ...", several joined; `shown` lists the fields placed, so the
 * form's error notice lists only the others.
 */
export function versionViolations(violations: Map<string, string>): { errors: VersionErrors; shown: string[] } {
  const parts: Partial<Record<VersionField, string[]>> = {};
  const shown: string[] = [];
  for (const [field, description] of violations) {
    const m = FIELD.exec(field);
    if (!m) continue;
    const at = m[1] as VersionField;
    (parts[at] ??= []).push(m[2] ? `${m[2]}: ${description}` : description);
    shown.push(field);
  }
  const errors: VersionErrors = {};
  for (const [at, list] of Object.entries(parts) as [VersionField, string[]][]) errors[at] = list.join('; ');
  return { errors, shown };
}
