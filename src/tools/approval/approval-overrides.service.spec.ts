import type { DbNotifierService } from '../../database/db-notifier.service';
import { APPROVAL_OVERRIDE_CHANNEL, APPROVAL_OVERRIDE_TTL_MS, ApprovalOverridesService } from './approval-overrides.service';
import type { ApprovalOverrideRepository, ApprovalOverrideRow } from './repositories/approval-override.repository';

/**
 * The cache in front of tool_approval_overrides: the runner asks it on every call, so it must
 * answer from memory, and a change must reach it. The table stands in as a Map (the SQL is
 * covered by test/e2e/tool-approvals.e2e-spec.ts on both databases).
 */
function setup() {
  const rows = new Map<string, ApprovalOverrideRow>();
  const reads: string[] = [];
  let failing = false;
  const repo = {
    find: async (projectId: string) => {
      reads.push(projectId);
      if (failing) throw new Error('connection refused');
      return rows.get(projectId) ?? null;
    },
    upsert: async (projectId: string, require: string[], exempt: string[], updatedBy: string | null) => {
      const row = { projectId, require, exempt, updatedAt: new Date(), updatedBy };
      rows.set(projectId, row);
      return row;
    },
  } as unknown as ApprovalOverrideRepository;
  const handlers = new Map<string, (payload: string) => void>();
  const notified: string[] = [];
  const notifier = {
    listen: async (channel: string, h: (p: string) => void) => (handlers.set(channel, h), () => undefined),
    notify: async (_channel: string, payload: string) => void notified.push(payload),
  } as unknown as DbNotifierService;
  const service = new ApprovalOverridesService(repo, notifier);
  let clock = 1_000_000;
  service.now = () => clock;
  return {
    service, rows, reads, notified,
    notify: (projectId: string) => handlers.get(APPROVAL_OVERRIDE_CHANNEL)!(projectId),
    advance: (ms: number) => (clock += ms),
    fail: (on: boolean) => (failing = on),
  };
}

describe('ApprovalOverridesService', () => {
  it('reads a project once while fresh, and concurrent first reads share one query', async () => {
    const s = setup();
    await s.service.onModuleInit();
    await Promise.all([s.service.overrideOf('p'), s.service.overrideOf('p'), s.service.overrideOf('p')]);
    await s.service.overrideOf('p');
    expect(s.reads).toEqual(['p']);
  });

  it('a NOTIFY from another instance drops the project at once; the TTL is the fallback for a missed one', async () => {
    const s = setup();
    await s.service.onModuleInit();
    expect(await s.service.overrideOf('p')).toBeNull();
    s.rows.set('p', { projectId: 'p', require: ['x'], exempt: [], updatedAt: new Date(), updatedBy: null }); // written elsewhere
    expect(await s.service.overrideOf('p')).toBeNull(); // cached
    s.notify('p');
    expect(await s.service.overrideOf('p')).toEqual({ require: ['x'], exempt: [] });
    s.rows.set('p', { projectId: 'p', require: ['y'], exempt: [], updatedAt: new Date(), updatedBy: null }); // and its NOTIFY lost
    s.advance(APPROVAL_OVERRIDE_TTL_MS - 1);
    expect(await s.service.overrideOf('p')).toEqual({ require: ['x'], exempt: [] });
    s.advance(1);
    expect(await s.service.overrideOf('p')).toEqual({ require: ['y'], exempt: [] });
  });

  it('set() applies on this instance at once and notifies the others', async () => {
    const s = setup();
    await s.service.onModuleInit();
    await s.service.overrideOf('p');
    await s.service.set('p', ['read_*'], [], 'admin (k1)');
    expect(await s.service.overrideOf('p')).toEqual({ require: ['read_*'], exempt: [] });
    expect(s.notified).toEqual(['p']);
  });

  it('a read that raced with a NOTIFY is not cached', async () => {
    const s = setup();
    await s.service.onModuleInit();
    const first = s.service.overrideOf('p'); // in flight
    s.notify('p');
    await first;
    await s.service.overrideOf('p');
    expect(s.reads).toEqual(['p', 'p']);
  });

  it('when the database fails, the override read before is used; with none known the call fails rather than guess', async () => {
    const s = setup();
    await s.service.onModuleInit();
    s.rows.set('p', { projectId: 'p', require: ['x'], exempt: [], updatedAt: new Date(), updatedBy: null });
    await s.service.overrideOf('p');
    s.advance(APPROVAL_OVERRIDE_TTL_MS);
    s.fail(true);
    expect(await s.service.overrideOf('p')).toEqual({ require: ['x'], exempt: [] });
    await expect(s.service.overrideOf('q')).rejects.toThrow('connection refused');
  });
});
