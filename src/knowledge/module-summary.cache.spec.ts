import type { DbNotifierService } from '../database/db-notifier.service';
import type { ModuleSummaryRow } from './repositories/knowledge.repository';
import { KNOWLEDGE_CHANGED_CHANNEL, MODULES_TTL_MS, ModuleSummaryCache } from './module-summary.cache';

/** Several instances on one database: a notification reaches every listener, the sender's too. */
class SharedNotifier {
  private readonly handlers: Array<{ channel: string; handler: (payload: string) => void }> = [];
  sent: Array<{ channel: string; payload: string }> = [];
  forInstance(): DbNotifierService {
    return {
      listen: async (channel: string, handler: (payload: string) => void) => {
        this.handlers.push({ channel, handler });
        return () => undefined;
      },
      notify: async (channel: string, payload: string) => {
        this.sent.push({ channel, payload });
        for (const h of this.handlers) if (h.channel === channel) h.handler(payload);
      },
    } as unknown as DbNotifierService;
  }
}

/** A project's modules as the database has them now; counts the aggregate queries it answers. */
function database() {
  const modules = new Map<string, ModuleSummaryRow[]>([['p1', [{ module: 'guides', docType: 'markdown', chunks: 3 }]]]);
  let queries = 0;
  return {
    get queries() {
      return queries;
    },
    set(projectId: string, rows: ModuleSummaryRow[]) {
      modules.set(projectId, rows);
    },
    load: (projectId: string) => async () => {
      queries++;
      return modules.get(projectId) ?? [];
    },
  };
}

async function instance(bus: SharedNotifier): Promise<ModuleSummaryCache> {
  const cache = new ModuleSummaryCache(bus.forInstance());
  await cache.onModuleInit();
  return cache;
}

describe('ModuleSummaryCache', () => {
  afterEach(() => jest.useRealTimers());

  it('answers the turns of a project from one aggregate query, concurrent ones included', async () => {
    const db = database();
    const cache = await instance(new SharedNotifier());
    const answers = await Promise.all(Array.from({ length: 50 }, () => cache.get('p1', db.load('p1'))));
    await cache.get('p1', db.load('p1'));
    expect(answers.every((a) => a[0].module === 'guides')).toBe(true);
    expect(db.queries).toBe(1);
  });

  it('an ingest on another instance shows on this one at its next turn', async () => {
    const db = database();
    const bus = new SharedNotifier();
    const [here, there] = [await instance(bus), await instance(bus)];
    expect((await here.get('p1', db.load('p1'))).map((r) => r.module)).toEqual(['guides']);

    db.set('p1', [{ module: 'api', docType: 'markdown', chunks: 1 }, { module: 'guides', docType: 'markdown', chunks: 3 }]);
    await there.changed('p1');

    expect(bus.sent).toEqual([{ channel: KNOWLEDGE_CHANGED_CHANNEL, payload: 'p1' }]);
    expect((await here.get('p1', db.load('p1'))).map((r) => r.module)).toEqual(['api', 'guides']);
  });

  it('a change announced while a load runs is not hidden by that load', async () => {
    const db = database();
    const bus = new SharedNotifier();
    const cache = await instance(bus);
    let release!: () => void;
    const slow = cache.get('p1', async () => {
      await new Promise<void>((r) => (release = r));
      return [{ module: 'stale', docType: 'markdown', chunks: 1 }];
    });
    await cache.changed('p1');
    release();
    await slow;
    expect((await cache.get('p1', db.load('p1'))).map((r) => r.module)).toEqual(['guides']);
  });

  it('uses an entry at most MODULES_TTL_MS, so writes made outside Orion show up', async () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const db = database();
    const cache = await instance(new SharedNotifier());
    await cache.get('p1', db.load('p1'));
    db.set('p1', []);
    jest.setSystemTime(1_000_000 + MODULES_TTL_MS - 1);
    expect(await cache.get('p1', db.load('p1'))).toHaveLength(1);
    jest.setSystemTime(1_000_000 + MODULES_TTL_MS);
    expect(await cache.get('p1', db.load('p1'))).toEqual([]);
    expect(db.queries).toBe(2);
  });

  it('does not keep a failed load: the next turn asks the database again', async () => {
    const db = database();
    const cache = await instance(new SharedNotifier());
    await expect(cache.get('p1', () => Promise.reject(new Error('database down')))).rejects.toThrow('database down');
    expect((await cache.get('p1', db.load('p1'))).map((r) => r.module)).toEqual(['guides']);
  });

  it('keeps projects apart', async () => {
    const db = database();
    db.set('p2', [{ module: 'other', docType: 'text', chunks: 9 }]);
    const cache = await instance(new SharedNotifier());
    await cache.get('p1', db.load('p1'));
    expect((await cache.get('p2', db.load('p2'))).map((r) => r.module)).toEqual(['other']);
    await cache.changed('p2');
    await cache.get('p1', db.load('p1'));
    expect(db.queries).toBe(2);
  });
});
