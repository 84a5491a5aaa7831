import { isIPv4 } from 'node:net';
import proxyAddr from '@fastify/proxy-addr';
import ipaddr from 'ipaddr.js';

/**
 * IPv6 clients are grouped by their /64: one subscriber (a home, a cloud instance) is usually handed a whole /64,
 * so counting single IPv6 addresses would let one client take 2^64 shares.
 */
export const IPV6_GROUP_PREFIX = 64;

/**
 * The key every per-client-address limit counts by (connections per address, failed authentications, the fair
 * queues' unauthenticated share): an IPv4 address as it is, an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, what a
 * dual-stack socket reports for an IPv4 peer) as that IPv4 address, any other IPv6 address as its /64 network
 * (`2001:db8:1:2::/64`). Anything that is not an address is kept as it is (lower-cased), never merged with another.
 */
export function addressKey(address: string): string {
  if (isIPv4(address)) return address;
  if (!ipaddr.IPv6.isValid(address)) return address.toLowerCase();
  const ip = ipaddr.IPv6.parse(address);
  if (ip.isIPv4MappedAddress()) return ip.toIPv4Address().toString();
  const network = new ipaddr.IPv6([...ip.parts.slice(0, 4), 0, 0, 0, 0]);
  return `${network.toString()}/${IPV6_GROUP_PREFIX}`;
}

/** Whether a peer is a trusted proxy; `hop` 0 is the socket's peer, 1 the next address of X-Forwarded-For… */
export type TrustProxy = (address: string, hop: number) => boolean;

/**
 * TRUST_PROXY (comma-separated addresses, CIDRs, or the names `loopback`, `linklocal`, `uniquelocal`) as the
 * function Fastify's `trustProxy` takes, compiled by the same library Fastify uses (@fastify/proxy-addr), so the
 * connection limits and `request.ip` agree on who is a proxy. Undefined when the setting is empty: trust none.
 * Throws a TypeError naming a bad entry.
 */
export function compileTrustProxy(setting: string): TrustProxy | undefined {
  const entries = setting
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (entries.length === 0) return undefined;
  return proxyAddr.compile(entries);
}
