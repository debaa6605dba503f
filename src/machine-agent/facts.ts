// What the machine agent reports about its server (API.md 8.5, MachineFacts), from node:os. Kept
// apart from the agent's loop so the local compute provider can report a simulated server instead.
import { arch, cpus, hostname, platform, release, totalmem } from 'node:os';
import type { MachineFactsT } from '../modules/machines/machines.schemas.js';
import { svcVersion } from '../platform/version.js';

/** This host's facts, cut to the lengths the service accepts (a strange kernel string must not make every heartbeat a 400). */
export function hostFacts(): MachineFactsT {
  return {
    hostname: hostname().slice(0, 253) || 'localhost',
    os: platform().slice(0, 100),
    arch: arch().slice(0, 40),
    cpu_count: cpus().length,
    memory_bytes: totalmem(),
    kernel: release().slice(0, 200),
    agent_version: svcVersion().slice(0, 40),
  };
}
