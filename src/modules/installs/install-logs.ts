// The logs of an install's pods (issue 36), read through its cluster's driver: a bounded page of
// lines, or a stream that follows them. Who may read them is who may read the install; an install
// being deleted has no logs to show (its pods are going). A cluster that cannot be reached or that
// refuses is a 503 or a 502 with the driver's reason, never a hang (the driver's requests time out).
import type { Db } from '../../db/database.js';
import {
  ClusterDriverError, LOG_RESPONSE_MAX_BYTES, LOG_RESPONSE_MAX_LINES, installNamespace, type ClusterDriver, type ClusterProvider,
  type LogLine, type LogOptions, type LogStream,
} from '../../drivers/cluster/driver.js';
import type { WorkspaceScope } from '../../platform/auth.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { isId } from '../../platform/ids.js';
import type { Keyring } from '../../platform/keyring.js';
import { driverFor, targetOf } from '../clusters/clusters.workflows.js';
import { findClusterById } from '../clusters/clusters.service.js';
import * as repo from './installs.repo.js';
import { LOG_TAIL_DEFAULT, type InstallLogsQueryT, type InstallLogsT } from './installs.schemas.js';

export interface InstallLogsDeps {
  db: Db;
  drivers: ReadonlyMap<ClusterProvider, ClusterDriver>;
  keyring: Keyring;
}

/** A driver's failure as the error shape: 503 when waiting may help, 502 when the cluster refused. */
function clusterFailure(err: ClusterDriverError): ApiError {
  if (err.retryable) {
    return new ApiError('UNAVAILABLE', `the install's cluster could not be reached: ${err.message}; try again in a moment`, {
      reason: 'CLUSTER_UNREACHABLE', headers: { 'retry-after': '10' },
    });
  }
  return new ApiError('UNAVAILABLE', `the install's cluster refused to give its logs: ${err.message}`, { reason: 'CLUSTER_ERROR', status: 502 });
}

/** The newest lines within the response's bounds (LOG_RESPONSE_MAX_LINES, LOG_RESPONSE_MAX_BYTES of text). */
export function boundedNewest(lines: LogLine[]): { items: LogLine[]; cut: boolean } {
  let bytes = 0;
  let from = lines.length;
  while (from > 0 && lines.length - from < LOG_RESPONSE_MAX_LINES) {
    const size = Buffer.byteLength(lines[from - 1]!.line, 'utf8');
    if (bytes + size > LOG_RESPONSE_MAX_BYTES) break;
    bytes += size;
    from--;
  }
  return { items: from === 0 ? lines : lines.slice(from), cut: from > 0 };
}

export function createInstallLogs(deps: InstallLogsDeps) {
  const { db } = deps;

  /** The install and its cluster, if the caller may read the install and it is not being deleted; 404 otherwise. */
  async function locate(scope: WorkspaceScope, id: string) {
    const row = isId('install', id) ? await repo.findInstall(db, scope.workspaceId, id) : undefined;
    if (!row || row.state === 'deleted' || (await repo.isBeingDeleted(db, row.id))) throw notFound('install');
    const cluster = await findClusterById(db, row.cluster_id);
    if (!cluster) throw notFound('install');
    return { row, cluster };
  }

  /** Opens the install's logs; `signal` (the client gone, the stream ended) aborts every request to the cluster. */
  async function open(scope: WorkspaceScope, id: string, query: InstallLogsQueryT, signal: AbortSignal): Promise<LogStream> {
    const { row, cluster } = await locate(scope, id);
    const options: LogOptions = {
      tail: query.tail ?? LOG_TAIL_DEFAULT, follow: query.follow === true,
      ...(query.container !== undefined ? { container: query.container } : {}),
      ...(query.since !== undefined ? { since: query.since } : {}),
    };
    try {
      const driver = driverFor(deps, cluster);
      return await driver.logs(targetOf(cluster, deps.keyring), { installId: row.id, namespace: installNamespace(row.id) }, options, { attempt: 1, signal });
    } catch (err) {
      if (err instanceof ClusterDriverError) throw clusterFailure(err);
      throw err;
    }
  }

  /** The lines as one answer (no follow), oldest first. */
  async function read(scope: WorkspaceScope, id: string, query: InstallLogsQueryT, signal: AbortSignal): Promise<InstallLogsT> {
    const stream = await open(scope, id, { ...query, follow: false }, signal);
    const lines: LogLine[] = [];
    for await (const line of stream.lines) lines.push(line);
    const { items, cut } = boundedNewest(lines);
    return { items, truncated: cut || stream.leftOut > 0 || stream.truncated() };
  }

  /** Whether the install is gone or being deleted (a follower's stream then ends). */
  async function gone(workspaceId: string, id: string): Promise<boolean> {
    const row = await repo.findInstall(db, workspaceId, id);
    return !row || row.state === 'deleted' || (await repo.isBeingDeleted(db, id));
  }

  return { open, read, gone };
}

export type InstallLogs = ReturnType<typeof createInstallLogs>;
