/**
 * Where a webhook may go (decisions §8, §11): outside the sandbox, and unless the operator
 * set WEBHOOK_ALLOW_PRIVATE_TARGETS=true, only `https` URLs whose every address is public. A
 * loopback, private, link-local (cloud metadata at 169.254.169.254 included), unique-local,
 * unspecified, multicast or reserved address is refused in any spelling: the URL parser already
 * turns `127.1`, `2130706433` and `0x7f000001` into `127.0.0.1`, and IPv4 inside IPv6
 * (`::ffff:7f00:1`, NAT64) is checked as the IPv4 it carries.
 *
 * Checked when an endpoint is created (its literal host) and at every delivery after name
 * resolution, inside the connection's own DNS look-up: the address checked is the address
 * connected to, so a DNS answer that changes between check and use cannot slip past.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent } from 'undici';

const FORBIDDEN = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  FORBIDDEN.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['100::', 64],
  ['2001::', 23],
] as const)
  FORBIDDEN.addSubnet(net, bits, 'ipv6');

export class TargetRefused extends Error {}

/** Whether the rules apply: outside the sandbox, unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true. */
export function targetsGuarded(config: { sandbox: boolean; WEBHOOK_ALLOW_PRIVATE_TARGETS: boolean }): boolean {
  return !config.sandbox && !config.WEBHOOK_ALLOW_PRIVATE_TARGETS;
}

/** Why an IP address may not be a webhook's target, or undefined when it may. */
export function forbiddenAddress(address: string): string | undefined {
  const ip = address.replace(/^\[|\]$/g, '');
  const family = isIP(ip);
  if (family === 0) return undefined;
  if (family === 6) {
    const v4 = embeddedIpv4(ip);
    if (v4) return forbiddenAddress(v4);
  }
  return FORBIDDEN.check(ip, family === 4 ? 'ipv4' : 'ipv6')
    ? `${ip} is a loopback, private, link-local or reserved address`
    : undefined;
}

/** The IPv4 address an IPv6 one carries: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d) or NAT64 (64:ff9b::/96). */
function embeddedIpv4(ip: string): string | undefined {
  const groups = expandIpv6(ip);
  if (!groups) return undefined;
  const head = groups.slice(0, 6).join(':');
  const carries = head === '0:0:0:0:0:ffff' || head === '0:0:0:0:0:0' || head === '64:ff9b:0:0:0:0';
  if (!carries || (head === '0:0:0:0:0:0' && groups[6] === 0)) return undefined; // :: and ::1 are checked as IPv6
  return [groups[6]! >> 8, groups[6]! & 255, groups[7]! >> 8, groups[7]! & 255].join('.');
}

function expandIpv6(ip: string): number[] | undefined {
  let text = ip.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, -dotted[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [left, right] = text.includes('::') ? text.split('::') : [text, undefined];
  const l = left ? left.split(':') : [];
  const r = right ? right.split(':') : [];
  const fill = right === undefined ? 0 : 8 - l.length - r.length;
  const all = [...l, ...Array<string>(fill).fill('0'), ...r].map((g) => parseInt(g || '0', 16));
  return all.length === 8 && all.every((g) => g >= 0 && g <= 0xffff) ? all : undefined;
}

/**
 * Checks a URL an operator gives for an endpoint; returns it normalised. `guarded`: the rules
 * above apply (outside the sandbox, unless private targets are allowed).
 */
export function checkTargetUrl(raw: string, guarded: boolean): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new TargetRefused('url: must be an absolute http or https URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new TargetRefused('url: must be an absolute http or https URL');
  if (url.username || url.password) throw new TargetRefused('url: must not carry a user name or password');
  if (!guarded) return url.toString();
  if (url.protocol !== 'https:')
    throw new TargetRefused('url: must be https (WEBHOOK_ALLOW_PRIVATE_TARGETS=true allows http to local receivers)');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host.endsWith('.localhost'))
    throw new TargetRefused('url: localhost is not a webhook target');
  const why = forbiddenAddress(host);
  if (why) throw new TargetRefused(`url: ${why}, not a webhook target (WEBHOOK_ALLOW_PRIVATE_TARGETS=true allows it)`);
  return url.toString();
}

/** A DNS look-up that answers only public addresses, and refuses the connection otherwise. */
const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, '', 0);
    const refused = addresses.map((a) => forbiddenAddress(a.address)).find(Boolean);
    if (refused || addresses.length === 0)
      return callback(new TargetRefused(`the target resolves to ${refused ?? 'no address'}`), '', 0);
    // Every address is public: connect to them as Node would (all, or the first).
    if ((options as { all?: boolean }).all)
      return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    return callback(null, addresses[0]!.address, addresses[0]!.family);
  });
};

/** The HTTP client of guarded deliveries: every connection's address comes from guardedLookup. */
export function guardedAgent(): Agent {
  return new Agent({ connect: { lookup: guardedLookup } });
}
