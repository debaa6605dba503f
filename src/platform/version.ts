// This build's version, from package.json (two levels above this file in both src/ and dist/).
import { readFileSync } from 'node:fs';

let version: string | undefined;

/** The `version` of package.json, read once. */
export function svcVersion(): string {
  version ??= (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  return version;
}
