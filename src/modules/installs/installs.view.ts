// An install as the API shows it (GET /v1/installs/{id}, list items, and the data of its events).
import type { Executor } from '../../db/database.js';
import { etagOf } from '../../platform/etag.js';
import * as repo from './installs.repo.js';
import type { InstallDetailT, InstallState, InstallT, PackageVersionPinT } from './installs.schemas.js';

/** Shared by every list item pinned to latest: responses only read it. */
const PIN_LATEST: PackageVersionPinT = Object.freeze({ kind: 'latest' });

export function pinOf(row: { pin_kind: string; pin_version: string | null }): PackageVersionPinT {
  if (row.pin_version === null && row.pin_kind === 'latest') return PIN_LATEST;
  return row.pin_version === null ? { kind: row.pin_kind as PackageVersionPinT['kind'] } : { kind: row.pin_kind as PackageVersionPinT['kind'], version: row.pin_version };
}

/** One list item; `urls` rows are used as they are (the response schema picks the members). */
export function installView(publicUrl: string, row: repo.InstallItemRow, urls: repo.UrlItemRow[]): InstallT {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    cluster_id: row.cluster_id,
    product_id: row.package_id,
    package_id: row.package_id,
    package_version_id: row.package_version_id,
    semver: row.semver ?? '',
    package_version_pin: pinOf(row),
    state: row.state as InstallState,
    reconciling: row.reconciling === 1,
    current_render_id: row.current_render_id,
    urls,
    html_url: `${publicUrl}/installs/${row.id}`,
    created_at: row.created_at,
    updated_at: row.updated_at,
    etag: etagOf(row.revision),
  };
}

/**
 * The install as GET /v1/installs/{id} returns it, read in `tx` (what its events carry, API.md 8.11);
 * undefined when it is gone. Stored as it is, so its URLs carry only the response schema's members.
 */
export async function installDetailIn(tx: Executor, publicUrl: string, workspaceId: string, id: string): Promise<InstallDetailT | undefined> {
  const row = await repo.findInstallDetail(tx, workspaceId, id);
  if (!row) return undefined;
  const urls = (await repo.listUrlsOfInstall(tx, id)).map(({ install_id: _installId, ...url }) => url);
  return { ...installView(publicUrl, row, urls as repo.UrlItemRow[]), values: JSON.parse(row.values) };
}
