// State changes of preview hostnames that follow their install's life, each one statement: an
// install's deploy evicts its pinned hostnames whose render was replaced long enough ago (in the
// deploy's publishing transaction), its deletion releases them all before the undeploy, and a
// periodic sweep evicts aged pinned hostnames of every install. Installs cannot import this module
// (it imports installs), so the composition root hands these to the install workflows and the runtime.
import type { Executor } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import type { InstallHostnames } from '../installs/installs.workflows.js';
import * as repo from './preview-hostnames.repo.js';

/** What an install's workflows do to its preview hostnames. */
export const installHostnames: InstallHostnames = {
  evictAgedPinned: (tx, installId, replacedBefore, now) => repo.evictAgedPinned(tx, installId, replacedBefore, now),
  releaseAll: (db, installId, now) => repo.releaseInstallHostnames(db, installId, now),
  served: (db, installId) => repo.listServedHostnames(db, installId),
};

/**
 * Evicts every pinned hostname whose render was replaced at least `retentionSeconds` ago, of every
 * install; returns how many (the runtime's sweep).
 */
export function evictAgedPinnedEverywhere(db: Executor, retentionSeconds: number): Promise<number> {
  const now = clock.now();
  return repo.evictAgedPinned(db, null, now - retentionSeconds, now);
}
