import { request, type Agent } from 'undici';
import { startCanary, startTestServer, type Canary, type TestServer } from '../../../test/support/net-test-servers';
import { AddressPolicy, type AddressVerdict } from './address-policy';
import { BlockedAddressError, createGuardedDispatcher, systemResolver, type HostResolver } from './guarded-dispatcher';

/**
 * The dispatcher on its own, with no URL pre-checks in front of it: whatever reaches
 * `connect` must be judged there, on the address the socket would really use.
 */

async function refusedWith(dispatcher: Agent, url: string): Promise<BlockedAddressError> {
  const err = await request(url, { dispatcher }).then(
    async (r) => {
      await r.body.dump();
      return new Error(`reached ${url} (HTTP ${r.statusCode})`);
    },
    (e: unknown) => e,
  );
  if (!(err instanceof BlockedAddressError)) throw err;
  return err;
}

describe('guarded dispatcher', () => {
  let canary: Canary;
  let allowed: TestServer;
  const agents: Agent[] = [];
  const agent = (policy: AddressPolicy, resolver?: HostResolver) => {
    const a = createGuardedDispatcher({ policy, resolver });
    agents.push(a);
    return a;
  };

  beforeAll(async () => {
    canary = await startCanary();
    allowed = await startTestServer((_req, res) => res.end('ok'));
  });
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.close()));
    await Promise.all([canary.close(), allowed.close()]);
  });

  it.each(['http://127.0.0.1:P/', 'http://2130706433:P/', 'http://0x7f.1:P/', 'http://[::1]:P/', 'http://[::ffff:127.0.0.1]:P/', 'http://0.0.0.0:P/', 'http://localhost:P/', 'https://127.0.0.1:P/'])(
    'refuses %s at connect time',
    async (template) => {
      const err = await refusedWith(agent(new AddressPolicy()), template.replace(':P', `:${canary.port}`));
      expect(err.code).toBe('ERR_ORION_ADDRESS_BLOCKED');
      expect(err.message).toMatch(/^connection to \S+ refused: it resolves to an? (loopback|unspecified) address/);
      expect(canary.hits()).toBe(0);
    },
  );

  it('checks the address the connect-time lookup returns, not an earlier one (DNS rebinding)', async () => {
    let lookups = 0;
    const rebinding: HostResolver = async (host) =>
      host === 'flip.test' ? [{ address: lookups++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 }] : systemResolver(host);

    // What a naive pre-check would have seen: a public address.
    const [precheck] = await rebinding('flip.test');
    expect(new AddressPolicy().checkAddress(precheck.address).allowed).toBe(true);

    const err = await refusedWith(agent(new AddressPolicy(), rebinding), `http://flip.test:${canary.port}/`);
    expect(err.verdict).toMatchObject({ address: '127.0.0.1', range: 'loopback' });
    expect(lookups).toBe(2);
    expect(canary.hits()).toBe(0);
  });

  it('refuses a name when any of its addresses is refused', async () => {
    const mixed: HostResolver = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '::1', family: 6 },
    ];
    const err = await refusedWith(agent(new AddressPolicy(), mixed), `http://mixed.test:${canary.port}/`);
    expect(err.verdict.range).toBe('loopback');
  });

  it('re-checks the connected socket before writing the request', async () => {
    /** A policy that lets the lookup pass once, then judges honestly (a lookup bug, simulated). */
    class LeakyLookupPolicy extends AddressPolicy {
      private calls = 0;
      override checkAddress(address: string): AddressVerdict {
        return this.calls++ === 0 ? { allowed: true, address, range: 'public' } : super.checkAddress(address);
      }
    }
    const resolver: HostResolver = async () => [{ address: '127.0.0.1', family: 4 }];
    const target = await startTestServer((_req, res) => res.end('must not be requested'));
    try {
      const err = await refusedWith(agent(new LeakyLookupPolicy(), resolver), `http://leaky.test:${target.port}/secret`);
      expect(err.verdict).toMatchObject({ address: '127.0.0.1', range: 'loopback' });
      expect(target.connections()).toBe(1); // the socket did open…
      expect(target.requests).toEqual([]); // …and was closed before a byte of HTTP was sent
    } finally {
      await target.close();
    }
  });

  it('lets an allow-listed host:port through and nothing else on that host', async () => {
    const policy = new AddressPolicy({ allowHosts: [allowed.hostPort] });
    const a = agent(policy);
    const ok = await request(`${allowed.origin}/`, { dispatcher: a });
    expect(ok.statusCode).toBe(200);
    expect(await ok.body.text()).toBe('ok');
    await refusedWith(a, `http://127.0.0.1:${canary.port}/`);
    expect(canary.hits()).toBe(0);
  });

  it('lets an allow-listed name through whatever it resolves to', async () => {
    const policy = new AddressPolicy({ allowHosts: ['searx.internal'] });
    const resolver: HostResolver = async (host) => (host === 'searx.internal' ? [{ address: '127.0.0.1', family: 4 }] : systemResolver(host));
    const res = await request(`http://searx.internal:${allowed.port}/`, { dispatcher: agent(policy, resolver) });
    expect(await res.body.text()).toBe('ok');
  });
});
