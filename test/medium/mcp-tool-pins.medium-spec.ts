import type { DataSource } from 'typeorm';
import type { CountingLogger } from '../../src/database/counting-logger';
import { McpToolPinsService, PIN_CHANGED, PIN_PENDING, pinHash, type SeenTool } from '../../src/tools/mcp/mcp-tool-pins.service';
import { McpToolPinRepository } from '../../src/tools/mcp/repositories/mcp-tool-pin.repository';
import { startDatabaseContext, type DatabaseContext } from '../support/db-context';

/** `n` tools of a server, each described as `version`. */
function listing(n: number, version: string): SeenTool[] {
  return Array.from({ length: n }, (_, i) => {
    const definition = { title: null, description: `tool ${i} ${version}`, inputSchema: { type: 'object' }, annotations: {} };
    return { tool: `t${i}`, name: `srv__t${i}`, definition, hash: pinHash(definition) };
  });
}

/**
 * MCP pins against the real database (PGlite here, PostgreSQL on test:db): the statements a
 * server's listing costs do not grow with its number of tools.
 */
describe('MCP tool pins (medium)', () => {
  let db: DatabaseContext;
  let ds: DataSource;
  let pins: McpToolPinsService;

  beforeAll(async () => {
    db = await startDatabaseContext([], [McpToolPinRepository, McpToolPinsService]);
    ds = db.ds;
    pins = db.ctx.get(McpToolPinsService);
  });
  afterAll(async () => {
    await db?.close();
  });

  /** How many statements `reconcile` sent, and what it held. */
  async function reconcile(server: string, seen: SeenTool[]): Promise<{ statements: number; held: Map<string, string> }> {
    const logger = ds.logger as CountingLogger;
    const before = logger.statements;
    const held = await pins.reconcile(server, seen);
    return { statements: logger.statements - before, held };
  }

  /** first sight, an added tool, every definition changed, every definition back: statements of each step */
  async function lifecycle(server: string, n: number): Promise<number[]> {
    const first = await reconcile(server, listing(n, 'v1'));
    expect(first.held.size).toBe(0);
    const added = await reconcile(server, [...listing(n, 'v1'), { ...listing(n + 1, 'v1')[n] }]);
    expect([...added.held]).toEqual([[`srv__t${n}`, PIN_PENDING]]);
    const changed = await reconcile(server, listing(n, 'v2'));
    expect(changed.held.size).toBe(n);
    expect(new Set(changed.held.values())).toEqual(new Set([PIN_CHANGED]));
    const back = await reconcile(server, listing(n, 'v1'));
    expect(back.held.size).toBe(0);
    return [first.statements, added.statements, changed.statements, back.statements];
  }

  it('pins, holds and restores 3 or 60 tools with the same number of statements', async () => {
    const few = await lifecycle('few', 3);
    const many = await lifecycle('many', 60);
    expect(many).toEqual(few);
    // a listing is read, written once per kind of change, and read again after inserting
    expect(Math.max(...many)).toBeLessThanOrEqual(3);
  });

  it('keeps what it wrote: the pending and changed definitions are listed, the restored ones are not', async () => {
    await reconcile('kept', listing(4, 'v1'));
    await reconcile('kept', listing(4, 'v2').slice(0, 2).concat(listing(4, 'v1').slice(2)));
    const pending = (await pins.list()).filter((p) => p.server === 'kept');
    expect(pending.map((p) => [p.tool, p.status, p.pendingDefinition?.description])).toEqual([
      ['t0', 'changed', 'tool 0 v2'],
      ['t1', 'changed', 'tool 1 v2'],
    ]);
    await reconcile('kept', listing(4, 'v1'));
    expect((await pins.list()).filter((p) => p.server === 'kept')).toEqual([]);
    const all = (await pins.list(true)).filter((p) => p.server === 'kept');
    expect(all.map((p) => [p.tool, p.status, p.definition?.description, p.pendingHash])).toEqual(
      [0, 1, 2, 3].map((i) => [`t${i}`, 'pinned', `tool ${i} v1`, null]),
    );
  });
});
