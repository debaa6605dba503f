// Which network addresses a request the service makes on a tenant's behalf may reach. A tenant
// gives an address (a cluster's gateway_url; later webhook endpoints) and the service connects
// there from inside the operator's network: without this check a tenant could read the cloud's
// metadata service (169.254.169.254 hands out credentials), the service's own ports on loopback,
// or anything else private to that network. Checked on the address actually connected to (after
// DNS resolution, in the socket's lookup), so a name that resolves differently later cannot slip by.
import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';

/** What kind of address it is, for messages; null for a public address. */
export type AddressKind = 'loopback' | 'private' | 'link-local' | 'unspecified' | 'reserved';

const RANGES: [AddressKind, string, number, 'ipv4' | 'ipv6'][] = [
  ['unspecified', '0.0.0.0', 8, 'ipv4'],
  ['private', '10.0.0.0', 8, 'ipv4'],
  ['private', '100.64.0.0', 10, 'ipv4'], // carrier-grade NAT, used inside clouds
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  ['link-local', '169.254.0.0', 16, 'ipv4'], // the metadata services of most clouds
  ['private', '172.16.0.0', 12, 'ipv4'],
  ['reserved', '192.0.0.0', 24, 'ipv4'],
  ['private', '192.168.0.0', 16, 'ipv4'],
  ['reserved', '198.18.0.0', 15, 'ipv4'],
  ['reserved', '224.0.0.0', 3, 'ipv4'], // multicast and 240/4
  ['unspecified', '::', 128, 'ipv6'],
  ['loopback', '::1', 128, 'ipv6'],
  ['private', 'fc00::', 7, 'ipv6'], // unique local
  ['link-local', 'fe80::', 10, 'ipv6'],
  ['reserved', 'ff00::', 8, 'ipv6'], // multicast
  ['reserved', '64:ff9b::', 96, 'ipv6'], // NAT64: an IPv4 address behind it may be any of the above
  ['reserved', '2002::', 16, 'ipv6'], // 6to4, the same
  ['private', 'fd00:ec2::', 32, 'ipv6'], // AWS's IPv6 metadata service (inside fc00::/7 already; named for the reader)
];

const LISTS = new Map<AddressKind, BlockList>();
for (const [kind, network, prefix, type] of RANGES) {
  const list = LISTS.get(kind) ?? new BlockList();
  list.addSubnet(network, prefix, type);
  LISTS.set(kind, list);
}

/**
 * The address as the check reads it: IPv6 canonical (the URL parser compresses and lowercases
 * it), and an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`, `::ffff:a00:1`) as the IPv4 address it is.
 */
function unmapped(address: string): { address: string; type: 'ipv4' | 'ipv6' } {
  if (isIP(address) === 4) return { address, type: 'ipv4' };
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!mapped) return { address: canonical, type: 'ipv6' };
  const hi = parseInt(mapped[1]!, 16);
  const lo = parseInt(mapped[2]!, 16);
  return { address: `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, type: 'ipv4' };
}

/** The kind of a non-public IP address, or null when it is public (or not an IP address at all). */
export function addressKind(address: string): AddressKind | null {
  if (isIP(address) === 0) return null;
  const { address: a, type } = unmapped(address);
  for (const [kind, list] of LISTS) if (list.check(a, type)) return kind;
  return null;
}

/** The error a refused address fails the connection with (`code` ESVC_ADDRESS_REFUSED). */
export class AddressRefusedError extends Error {
  readonly code = 'ESVC_ADDRESS_REFUSED';
  constructor(readonly address: string, readonly kind: AddressKind) {
    super(`${address} is a ${kind} address`);
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request / net.connect that resolves as usual and fails the connection with
 * AddressRefusedError when an address it would use is not public. (Node calls `lookup` only for
 * names: check an IP literal with addressKind before connecting.)
 */
export function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '');
    const list = addresses as LookupAddress[];
    for (const a of list) {
      const kind = addressKind(a.address);
      if (kind) return callback(new AddressRefusedError(a.address, kind), '');
    }
    if (options.all) return callback(null, list);
    const first = list[0];
    if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
    callback(null, first.address, first.family);
  });
}
