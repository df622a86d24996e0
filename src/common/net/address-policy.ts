import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which IP addresses the web tools and webhook deliveries may connect to. Default-deny: an address is allowed only
 * when it is global unicast (IPv4 outside every special-purpose block, IPv6 inside 2000::/3
 * and outside its special blocks). Addresses that embed an IPv4 address (IPv4-mapped,
 * IPv4-compatible, IPv4-translated, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by the
 * embedded address, so `::ffff:127.0.0.1` is loopback, not "IPv6 unicast".
 *
 * Ranges: IANA IPv4/IPv6 Special-Purpose Address Registries (RFC 6890 and successors).
 * The metadata addresses come from the cloud providers' docs (AWS, GCP, Azure, Alibaba,
 * Oracle); most already sit in a refused range, and are listed first for a clearer message.
 */

/** What the policy says about one address. */
export interface AddressVerdict {
  allowed: boolean;
  /** the address as given (normalized) */
  address: string;
  /** human label of the range: 'loopback', 'private', 'cloud metadata', 'public', … */
  range: string;
  /** for addresses judged by an embedded IPv4: which one, and how it was embedded */
  embedded?: { address: string; via: string };
}

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];
const cidrs = (...list: string[]): Cidr[] => list.map((c) => ipaddr.parseCIDR(c));

/** Checked in order; the first match names the range. */
const V4_BLOCKED: Array<[label: string, ranges: Cidr[]]> = [
  ['cloud metadata', cidrs('169.254.169.254/32', '100.100.100.200/32', '168.63.129.16/32', '192.0.0.192/32')],
  ['unspecified', cidrs('0.0.0.0/8')],
  ['loopback', cidrs('127.0.0.0/8')],
  ['private', cidrs('10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16')],
  ['link-local', cidrs('169.254.0.0/16')],
  ['carrier-grade NAT', cidrs('100.64.0.0/10')],
  ['multicast', cidrs('224.0.0.0/4')],
  ['broadcast', cidrs('255.255.255.255/32')],
  ['reserved', cidrs('240.0.0.0/4', '192.0.0.0/24', '192.88.99.0/24')],
  ['documentation', cidrs('192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24')],
  ['benchmarking', cidrs('198.18.0.0/15')],
];

const V6_BLOCKED: Array<[label: string, ranges: Cidr[]]> = [
  ['cloud metadata', cidrs('fd00:ec2::254/128')],
  ['unspecified', cidrs('::/128')],
  ['loopback', cidrs('::1/128')],
  ['NAT64 local-use', cidrs('64:ff9b:1::/48')],
  // Teredo hides the real peer behind an obfuscated relay address; no web page needs it.
  ['Teredo', cidrs('2001::/32')],
  ['benchmarking', cidrs('2001:2::/48')],
  ['documentation', cidrs('2001:db8::/32', '3fff::/20')],
  ['reserved', cidrs('2001::/23', '100::/64', '5f00::/16')],
  ['link-local', cidrs('fe80::/10')],
  ['site-local', cidrs('fec0::/10')],
  ['unique-local', cidrs('fc00::/7')],
  ['multicast', cidrs('ff00::/8')],
];
const V6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/** IPv6 blocks that carry an IPv4 address, and where (which 16-bit groups). */
const V6_EMBEDDING: Array<[via: string, range: Cidr, groups: [number, number]]> = [
  ['IPv4-mapped', ipaddr.parseCIDR('::ffff:0:0/96'), [6, 7]],
  ['IPv4-translated', ipaddr.parseCIDR('::ffff:0:0:0/96'), [6, 7]],
  ['NAT64', ipaddr.parseCIDR('64:ff9b::/96'), [6, 7]],
  ['6to4', ipaddr.parseCIDR('2002::/16'), [1, 2]],
  // IPv4-compatible (deprecated): ::a.b.c.d; :: and ::1 were matched before this runs.
  ['IPv4-compatible', ipaddr.parseCIDR('::/96'), [6, 7]],
];

/**
 * ipaddr.parse reads `::a.b.c.d` (IPv4-compatible) as `::ffff:a.b.c.d` (IPv4-mapped); writing
 * the dotted tail as two hex groups first keeps the address exactly as the kernel sees it.
 */
function parseIp(raw: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const dotted = isIP(raw) === 6 ? /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)(%.*)?$/.exec(raw) : null;
  if (!dotted) return ipaddr.parse(raw);
  const [a, b, c, d] = dotted.slice(2, 6).map(Number);
  const group = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);
  return ipaddr.parse(`${dotted[1]}${group(a, b)}:${group(c, d)}${dotted[6] ?? ''}`);
}

/** Classifies one IP address (v4 or v6, optionally with a zone id). Non-IP input is refused. */
export function classifyAddress(input: string): AddressVerdict {
  const raw = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input;
  if (!isIP(raw)) return { allowed: false, address: input, range: 'not an IP address' };
  const addr = parseIp(raw);
  return addr.kind() === 'ipv4' ? classifyV4(addr as ipaddr.IPv4) : classifyV6(addr as ipaddr.IPv6);
}

function classifyV4(addr: ipaddr.IPv4): AddressVerdict {
  const address = addr.toString();
  for (const [label, ranges] of V4_BLOCKED) {
    if (ranges.some((r) => addr.match(r))) return { allowed: false, address, range: label };
  }
  // ipaddr's own table as a safety net for blocks added after this list (as112, amt, …).
  const known = addr.range();
  if (known !== 'unicast') return { allowed: false, address, range: `special-purpose (${known})` };
  return { allowed: true, address, range: 'public' };
}

function classifyV6(addr: ipaddr.IPv6): AddressVerdict {
  const address = addr.toString();
  for (const [label, ranges] of V6_BLOCKED.slice(0, 3)) {
    if (ranges.some((r) => addr.match(r))) return { allowed: false, address, range: label };
  }
  for (const [via, range, [hi, lo]] of V6_EMBEDDING) {
    if (!addr.match(range)) continue;
    const p = addr.parts;
    const v4 = new ipaddr.IPv4([p[hi] >> 8, p[hi] & 0xff, p[lo] >> 8, p[lo] & 0xff]);
    const inner = classifyV4(v4);
    return { ...inner, address, embedded: { address: inner.address, via } };
  }
  for (const [label, ranges] of V6_BLOCKED.slice(3)) {
    if (ranges.some((r) => addr.match(r))) return { allowed: false, address, range: label };
  }
  if (!addr.match(V6_GLOBAL_UNICAST)) return { allowed: false, address, range: 'unallocated' };
  const known = addr.range();
  if (known !== 'unicast') return { allowed: false, address, range: `special-purpose (${known})` };
  return { allowed: true, address, range: 'public' };
}

/** Lower-cases, strips IPv6 brackets and one trailing dot, and canonicalizes IP literals. */
export function canonicalHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.') && !isIP(h)) h = h.slice(0, -1);
  return isIP(h) ? parseIp(h).toString() : h;
}

/** One FETCH_ALLOW_HOSTS entry: `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6. */
interface AllowEntry {
  host: string;
  port?: number;
}

function parseAllowEntry(entry: string): AllowEntry | null {
  const e = entry.trim();
  if (!e) return null;
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(e);
  if (bracketed) return { host: canonicalHost(bracketed[1]), port: bracketed[2] ? Number(bracketed[2]) : undefined };
  if (isIP(e) === 6) return { host: canonicalHost(e) };
  const withPort = /^([^:]+):(\d{1,5})$/.exec(e);
  if (withPort) return { host: canonicalHost(withPort[1]), port: Number(withPort[2]) };
  return e.includes(':') ? null : { host: canonicalHost(e) };
}

export interface AddressPolicyOptions {
  /**
   * FETCH_ALLOW_HOSTS entries: hosts (any port) or host:port pairs reached even when they
   * resolve to a refused address. Matched exactly (case-insensitive, no wildcards) against
   * the URL's host, on every redirect hop.
   */
  allowHosts?: readonly string[];
}

/**
 * The address policy plus the operator's allow-list. Stateless apart from the list, so one
 * instance is shared by the dispatcher (connect-time checks) and the fetcher (early checks).
 */
export class AddressPolicy {
  private readonly allow: AllowEntry[];

  constructor(options: AddressPolicyOptions = {}) {
    this.allow = (options.allowHosts ?? []).map(parseAllowEntry).filter((e): e is AllowEntry => e !== null);
  }

  /** Whether the operator allow-listed this host (and port). */
  isAllowListed(host: string, port: number): boolean {
    const h = canonicalHost(host);
    return this.allow.some((e) => e.host === h && (e.port === undefined || e.port === port));
  }

  /** Classifies an address (the allow-list is applied by callers, which know the host). */
  checkAddress(address: string): AddressVerdict {
    return classifyAddress(address);
  }

  /**
   * A verdict for a host before any DNS: IP literals are classified, `localhost` and
   * `*.localhost` are loopback by definition (RFC 6761). Other names return null: they are
   * judged at connect time on the address they actually resolve to.
   */
  checkHost(host: string): AddressVerdict | null {
    const h = canonicalHost(host);
    if (isIP(h)) return classifyAddress(h);
    if (h === 'localhost' || h.endsWith('.localhost')) return { allowed: false, address: h, range: 'loopback' };
    return null;
  }
}

/** "a loopback address (127.0.0.1)" / "an unspecified address (…)", for error messages. */
export function describeVerdict(v: AddressVerdict): string {
  const article = /^[aeiou]/i.test(v.range) ? 'an' : 'a';
  const detail = v.embedded ? `${v.embedded.address} embedded in ${v.embedded.via} ${v.address}` : v.address;
  return `${article} ${v.range} address (${detail})`;
}
