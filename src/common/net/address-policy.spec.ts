import fc from 'fast-check';
import { AddressPolicy, canonicalHost, classifyAddress, describeVerdict } from './address-policy';

const v4 = (a: number, b: number, c: number, d: number) => `${a}.${b}.${c}.${d}`;
const hex = (n: number) => n.toString(16);
/** An IPv4 address as the 32-bit tail of an IPv6 address (`7f00:1`). */
const tail = (a: number, b: number, c: number, d: number) => `${hex((a << 8) | b)}:${hex((c << 8) | d)}`;

const octet = fc.integer({ min: 0, max: 255 });
/** IPv4 addresses inside a refused block, with the range label the policy must give. */
const refusedV4 = fc.oneof(
  fc.tuple(fc.constant(127), octet, octet, octet).map((o) => [o, 'loopback'] as const),
  fc.tuple(fc.constant(10), octet, octet, octet).map((o) => [o, 'private'] as const),
  fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), octet, octet).map((o) => [o, 'private'] as const),
  fc.tuple(fc.constant(192), fc.constant(168), octet, octet).map((o) => [o, 'private'] as const),
  fc.tuple(fc.constant(100), fc.integer({ min: 64, max: 127 }), octet, octet)
    .filter(([, b, c, d]) => !(b === 100 && c === 100 && d === 200))
    .map((o) => [o, 'carrier-grade NAT'] as const),
  fc.tuple(fc.constant(0), octet, octet, octet).map((o) => [o, 'unspecified'] as const),
  fc.tuple(fc.integer({ min: 224, max: 239 }), octet, octet, octet).map((o) => [o, 'multicast'] as const),
);

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'], ['0.0.0.0', 'unspecified'], ['10.1.2.3', 'private'], ['172.16.0.1', 'private'],
    ['192.168.10.1', 'private'], ['169.254.1.1', 'link-local'], ['100.64.0.1', 'carrier-grade NAT'],
    ['169.254.169.254', 'cloud metadata'], ['100.100.100.200', 'cloud metadata'], ['168.63.129.16', 'cloud metadata'],
    ['255.255.255.255', 'broadcast'], ['224.0.0.251', 'multicast'], ['240.1.2.3', 'reserved'], ['192.0.2.10', 'documentation'],
    ['198.18.5.5', 'benchmarking'], ['198.19.0.1', 'benchmarking'], ['192.31.196.1', 'special-purpose (as112)'],
    ['::1', 'loopback'], ['::', 'unspecified'], ['fe80::1', 'link-local'], ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'unique-local'], ['fd00:ec2::254', 'cloud metadata'], ['ff02::1', 'multicast'], ['2001:db8::1', 'documentation'],
    ['2001:2::1', 'benchmarking'], ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'], ['64:ff9b:1::1', 'NAT64 local-use'],
    ['fec0::1', 'site-local'], ['100::1', 'reserved'], ['1::1', 'unallocated'], ['not-an-ip', 'not an IP address'],
  ])('refuses %s as %s', (address, range) => {
    expect(classifyAddress(address)).toMatchObject({ allowed: false, range });
  });

  it.each([
    ['::ffff:127.0.0.1', 'loopback', 'IPv4-mapped'], ['::ffff:7f00:1', 'loopback', 'IPv4-mapped'],
    ['::127.0.0.1', 'loopback', 'IPv4-compatible'], ['::ffff:0:7f00:1', 'loopback', 'IPv4-translated'],
    ['64:ff9b::10.0.0.1', 'private', 'NAT64'], ['64:ff9b::a9fe:a9fe', 'cloud metadata', 'NAT64'],
    ['2002:c0a8:0101::1', 'private', '6to4'], ['2002:7f00:1::', 'loopback', '6to4'],
  ])('judges %s by its embedded IPv4 (%s via %s)', (address, range, via) => {
    const verdict = classifyAddress(address);
    expect(verdict).toMatchObject({ allowed: false, range, embedded: { via } });
  });

  it.each(['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '2001:4860:4860::8888', '64:ff9b::808:808', '2002:808:808::1', '::ffff:8.8.4.4'])(
    'allows the public address %s',
    (address) => {
      expect(classifyAddress(address)).toMatchObject({ allowed: true });
    },
  );

  it('refuses every refused IPv4 in every IPv6 wrapping, under the same label', () => {
    fc.assert(
      fc.property(refusedV4, ([[a, b, c, d], range]) => {
        for (const form of [v4(a, b, c, d), `::ffff:${v4(a, b, c, d)}`, `::ffff:${tail(a, b, c, d)}`, `64:ff9b::${tail(a, b, c, d)}`, `2002:${tail(a, b, c, d)}::1`]) {
          const verdict = classifyAddress(form);
          if (verdict.allowed || verdict.range !== range) return false;
        }
        return true;
      }),
      { numRuns: 500 },
    );
  });

  it('gives a URL host the verdict of its dotted form, whatever its spelling', () => {
    fc.assert(
      fc.property(refusedV4, ([[a, b, c, d]]) => {
        const n = ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
        const spellings = [`${n}`, `0x${hex(n)}`, `0${n.toString(8)}`, `0x${hex(a)}.${b}.${c}.${d}`, `0${a.toString(8)}.${b}.${c}.${d}`];
        return spellings.every((s) => classifyAddress(new URL(`http://${s}/`).hostname).allowed === false);
      }),
      { numRuns: 300 },
    );
  });

  it('describes a verdict for messages', () => {
    expect(describeVerdict(classifyAddress('127.0.0.1'))).toBe('a loopback address (127.0.0.1)');
    expect(describeVerdict(classifyAddress('0.0.0.0'))).toBe('an unspecified address (0.0.0.0)');
    expect(describeVerdict(classifyAddress('::ffff:7f00:1'))).toBe('a loopback address (127.0.0.1 embedded in IPv4-mapped ::ffff:7f00:1)');
  });
});

describe('AddressPolicy allow-list', () => {
  const policy = new AddressPolicy({
    allowHosts: ['searx.internal', 'Docs.Local:8080', '127.0.0.1:3001', '[::1]:4000', 'fd00::5', ' ', 'bad:entry:x'],
  });

  it.each([
    ['searx.internal', 80, true], ['SEARX.INTERNAL.', 443, true], ['docs.local', 8080, true], ['docs.local', 80, false],
    ['127.0.0.1', 3001, true], ['127.0.0.1', 3002, false], ['::1', 4000, true], ['[::1]', 4000, true], ['::1', 4001, false],
    ['fd00::5', 1234, true], ['[fd00:0::5]', 1, true], ['localhost', 3001, false], ['evil.searx.internal', 80, false],
  ] as const)('%s:%i allowed=%s', (host, port, allowed) => {
    expect(policy.isAllowListed(host, port)).toBe(allowed);
  });

  it('refuses localhost names before DNS and leaves other names to connect time', () => {
    expect(policy.checkHost('localhost.')).toMatchObject({ allowed: false, range: 'loopback' });
    expect(policy.checkHost('api.LOCALHOST')).toMatchObject({ allowed: false, range: 'loopback' });
    expect(policy.checkHost('[::1]')).toMatchObject({ allowed: false, range: 'loopback' });
    expect(policy.checkHost('example.com')).toBeNull();
  });

  it('canonicalizes hosts', () => {
    expect(canonicalHost('[0:0::1]')).toBe('::1');
    expect(canonicalHost('Example.COM.')).toBe('example.com');
  });
});
