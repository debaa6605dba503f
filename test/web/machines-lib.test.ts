// Unit tests of the machine pages' logic kept free of the DOM (web/src/lib/machines.ts, links.ts):
// names, facts under human labels, the actions each state allows, and where a machine, a worker
// bootstrap and the machine notifications link.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { factRows, formatGiB, machineActions, machineName } from '../../web/src/lib/machines.js';
import { resourceHref } from '../../web/src/lib/links.js';

const FACTS = { hostname: 'build-host', os: 'linux', arch: 'arm64', cpu_count: 8, memory_bytes: 16 * 1024 ** 3, kernel: '6.1.0-28-arm64', agent_version: '0.1.0' };

test('a machine is called by its name, else its node, else its host, else its id', () => {
  const m = { id: 'mch_1', name: null, node_name: null, facts: null };
  assert.equal(machineName(m), 'mch_1');
  assert.equal(machineName({ ...m, facts: FACTS }), 'build-host');
  assert.equal(machineName({ ...m, facts: FACTS, node_name: 'build-host-x1' }), 'build-host-x1');
  assert.equal(machineName({ ...m, facts: FACTS, node_name: 'build-host-x1', name: 'ci' }), 'ci');
});

test('facts read under human labels: memory in GiB, the OS by its name', () => {
  assert.equal(formatGiB(8_254_390_272), '7.7 GiB');
  assert.deepEqual(factRows(FACTS), [
    ['Host name', 'build-host'],
    ['CPUs', '8'],
    ['Memory', '16.0 GiB'],
    ['OS', 'Linux'],
    ['Kernel', '6.1.0-28-arm64'],
    ['Architecture', 'arm64'],
    ['Agent version', '0.1.0'],
  ]);
  assert.equal(factRows({ ...FACTS, os: 'plan9' })[3]![1], 'plan9', 'an OS without a name reads as reported');
});

test('the actions a state allows: suspend when active or unreachable, resume when suspended, delete unless deleting', () => {
  assert.deepEqual(machineActions('ACTIVE'), { suspend: true, resume: false, remove: true });
  assert.deepEqual(machineActions('UNREACHABLE'), { suspend: true, resume: false, remove: true });
  assert.deepEqual(machineActions('SUSPENDED'), { suspend: false, resume: true, remove: true });
  assert.deepEqual(machineActions('JOINING'), { suspend: false, resume: false, remove: true });
  assert.deepEqual(machineActions('DELETING'), { suspend: false, resume: false, remove: false });
});

test('links: a machine (and its notifications) to its page, a worker bootstrap to its cluster', () => {
  assert.equal(resourceHref('machine', 'mch_1'), '/machines/mch_1');
  // machine_unreachable and machine_expiry notifications name the machine as their resource.
  assert.equal(resourceHref('machine', 'mch_1', { machine_id: 'mch_1', notice: '72h' }), '/machines/mch_1');
  assert.equal(resourceHref('worker_bootstrap', 'wbs_1', { cluster_id: 'clu_1' }), '/clusters/clu_1');
  assert.equal(resourceHref('worker_bootstrap', 'wbs_1'), null);
  assert.equal(resourceHref('secret_version', 'secv_1', { secret_id: 'sec_1' }), '/secrets/sec_1');
});
