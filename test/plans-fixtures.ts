// Plan catalogs for tests, written as the operator's SVC_PLANS_FILE: limits small enough to reach in
// a test, or large enough that suites which create many resources run on `free` with quotas still
// enforced (never switched off).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILT_IN_PLANS, type Plan } from '../src/modules/plans/plans.js';
import type { MetricKey } from '../src/modules/plans/metrics.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-plans-'));
process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** Writes a plans file: the built-in catalog with `free`'s limits overridden (and any tier's via `tiers`); returns its path. */
export function plansFile(free: Partial<Record<MetricKey, number>> = {}, tiers: Record<string, Partial<Record<MetricKey, number>>> = {}): string {
  const plans: Plan[] = BUILT_IN_PLANS.map((p) => ({
    ...p, limits: { ...p.limits, ...(p.tier === 'free' ? free : {}), ...tiers[p.tier] },
  }));
  const file = join(dir, `plans-${process.pid}-${++files}.json`);
  writeFileSync(file, JSON.stringify(plans));
  return file;
}

/** `free` with room for suites that create dozens of clusters, installs or workspaces per user. */
export function roomyPlans(): { SVC_PLANS_FILE: string } {
  return {
    SVC_PLANS_FILE: plansFile({
      'workspaces/owned': 1000, 'compute/clusters': 1000, 'compute/machines': 10_000, 'installs/installs': 1000, 'operations/running': 1000,
    }),
  };
}
