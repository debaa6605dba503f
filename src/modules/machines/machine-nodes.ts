// A machine as a node of its cluster: its node name. The cluster's capabilities snapshot kept in
// step with its machines is the clusters module's (syncClusterNodes in clusters.service.ts).

/** An RFC 1123 label from the host name, made unique by the end of the machine id: `build-01-3m2k7`. */
export function nodeNameOf(hostname: string, machineId: string): string {
  const base = hostname.toLowerCase().split('.')[0]!.replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'machine';
  return `${base}-${machineId.slice(-5)}`;
}
