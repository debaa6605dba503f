// The choices of the install form and what the install page says about an install's state, kept
// apart from the pages so they are unit-tested without a browser.

export interface VersionChoice {
  semver: string;
  prerelease: boolean;
}

/** The value of the version select that means "the latest release, also on later updates". */
export const LATEST = 'latest';

export type Pin = { kind: 'latest' } | { kind: 'pinned'; version: string };

/** The pin a version choice stands for. */
export function pinOf(choice: string): Pin {
  return choice === LATEST ? { kind: 'latest' } : { kind: 'pinned', version: choice };
}

/** The options of the version select: the latest release (when there is one), then every version newest first. */
export function versionOptions(versions: VersionChoice[], latest: string | null): [value: string, label: string][] {
  const out: [string, string][] = latest ? [[LATEST, `Latest release (now ${latest})`]] : [];
  for (const v of versions) out.push([v.semver, v.prerelease ? `${v.semver} (prerelease)` : v.semver]);
  return out;
}

/**
 * The version whose input schema the form shows: the one chosen, or for "latest" the package's
 * latest release (what the API resolves it to).
 */
export function chosenVersion<V extends VersionChoice>(versions: V[], choice: string, latest: string | null): V | undefined {
  const semver = choice === LATEST ? latest : choice;
  return versions.find((v) => v.semver === semver);
}

/** The version choice a link asked for (`?version=1.2.0`), when the package has it; else the default. */
export function initialChoice(versions: VersionChoice[], latest: string | null, wanted: string | undefined): string {
  if (wanted && (wanted === LATEST ? latest : versions.some((v) => v.semver === wanted))) return wanted;
  return latest ? LATEST : (versions[0]?.semver ?? '');
}

/** An install's state in a sentence, for the install page's health line. */
export function healthOf(install: { state: string; reconciling: boolean }): string {
  const busy = install.reconciling ? ' An operation is acting on it now.' : '';
  switch (install.state) {
    case 'healthy':
      return `Running: its current render is healthy and its URLs answer.${busy}`;
    case 'degraded':
      return `An update failed: the previous render still runs.${busy}`;
    case 'failed':
      return 'It never became healthy: no render runs. Update its inputs to deploy again, or delete it.';
    case 'deleted':
      return 'Removed from its cluster; it disappears in a moment.';
    default:
      return `Deploying: ${install.state}.${busy}`;
  }
}
