import { type FencedAppend, LeaseLostError, type RunEventRepository } from './repositories/run-event.repository';
import { RunEventWriter } from './run-event-writer.service';

/** A repository whose grouped statement is released by hand, recording what each carried. */
function fakeRepo(fenced: Set<string> = new Set()) {
  const statements: FencedAppend[][] = [];
  const release: Array<(err?: Error) => void> = [];
  const repo = {
    appendFencedMany: (appends: FencedAppend[]) => {
      statements.push(appends);
      return new Promise<Map<string, number>>((resolve, reject) => {
        release.push((err) => {
          if (err) return reject(err);
          const stored = new Map<string, number>();
          for (const a of appends) if (!fenced.has(a.requestId)) stored.set(a.requestId, (stored.get(a.requestId) ?? 0) + a.rows.length);
          resolve(stored);
        });
      });
    },
    appendFenced: jest.fn(async () => undefined),
  } as unknown as RunEventRepository;
  return { repo, statements, release };
}

const rows = (...seqs: number[]) => seqs.map((seq) => ({ seq, type: 'chunk', data: { seq } }));
const tick = () => new Promise((r) => setImmediate(r));
const settled = (p: Promise<void>) => p.then(() => 'stored', (e: Error) => e.name);

describe('RunEventWriter', () => {
  it('stores the events of several runs handed over in one tick with one statement, and settles each once committed', async () => {
    const { repo, statements, release } = fakeRepo();
    const writer = new RunEventWriter(repo);
    const a = settled(writer.append('a', 'me', rows(1, 2)));
    const b = settled(writer.append('b', 'me', rows(1)));
    await tick();
    expect(statements).toHaveLength(1);
    expect(statements[0].map((s) => [s.requestId, s.rows.length])).toEqual([['a', 2], ['b', 1]]);
    let done = false;
    void Promise.all([a, b]).then(() => (done = true));
    await tick();
    expect(done).toBe(false);
    release[0]();
    expect(await Promise.all([a, b])).toEqual(['stored', 'stored']);
  });

  it('keeps one statement in flight: what arrives meanwhile goes together in the next', async () => {
    const { repo, statements, release } = fakeRepo();
    const writer = new RunEventWriter(repo);
    const first = settled(writer.append('a', 'me', rows(1)));
    await tick();
    const later = [settled(writer.append('b', 'me', rows(1))), settled(writer.append('c', 'me', rows(1, 2, 3)))];
    await tick();
    await tick();
    expect(statements).toHaveLength(1);
    release[0]();
    expect(await first).toBe('stored');
    await tick();
    expect(statements).toHaveLength(2);
    expect(statements[1].map((s) => s.requestId)).toEqual(['b', 'c']);
    release[1]();
    expect(await Promise.all(later)).toEqual(['stored', 'stored']);
  });

  it('fails only the run whose lease is gone when fenced; a failed statement is retried run by run, so only the failing run fails', async () => {
    const { repo, release, statements } = fakeRepo(new Set(['b']));
    const writer = new RunEventWriter(repo);
    const fencedFlush = [settled(writer.append('a', 'me', rows(1))), writer.append('b', 'me', rows(1)).catch((e: Error) => e)];
    await tick();
    release[0]();
    const [a, b] = await Promise.all(fencedFlush);
    expect(a).toBe('stored');
    expect(b).toBeInstanceOf(LeaseLostError);

    const failedFlush = [settled(writer.append('a', 'me', rows(2))), settled(writer.append('c', 'me', rows(1)))];
    await tick();
    release[1](new Error('duplicate key'));
    // then each run alone: a's statement fails again, c's goes through
    await tick();
    release[2](new Error('duplicate key'));
    await tick();
    await tick();
    release[3]();
    expect(await Promise.all(failedFlush)).toEqual(['Error', 'stored']);
    expect(statements.slice(2).map((st) => st.map((x) => x.requestId))).toEqual([['a'], ['c']]);
  });

  it('stores a run\'s closing event with its own statement, which also closes the run', async () => {
    const { repo, statements } = fakeRepo();
    const writer = new RunEventWriter(repo);
    await writer.append('a', 'me', rows(9), { status: 'completed', stopReason: 'end_turn' });
    expect(repo.appendFenced).toHaveBeenCalledWith('a', 'me', rows(9), { status: 'completed', stopReason: 'end_turn' });
    expect(statements).toHaveLength(0);
  });

  it('serves queued batches in the order they were handed over; a batch takes events until a statement takes it', async () => {
    const { repo, statements, release } = fakeRepo();
    const writer = new RunEventWriter(repo);
    const run = { failed: null };
    const a1 = { requestId: 'a', rows: rows(1), closed: false, run };
    const first = settled(writer.enqueue(a1, 'me'));
    a1.rows.push(...rows(2)); // the run adds to its batch before the statement starts
    await tick();
    expect(statements[0].map((s) => [s.requestId, s.rows.length])).toEqual([['a', 2]]);
    expect(a1.closed).toBe(true); // taken: the run's next events go in a new batch
    const a2 = { requestId: 'a', rows: rows(3), closed: false, run };
    const b1 = { requestId: 'b', rows: rows(1), closed: false, run: { failed: null } };
    const later = [settled(writer.enqueue(a2, 'me')), settled(writer.enqueue(b1, 'me'))];
    a2.rows.push(...rows(4)); // still waiting: joins its batch, which keeps its place ahead of b's
    release[0]();
    expect(await first).toBe('stored');
    await tick();
    expect(statements[1].map((s) => [s.requestId, s.rows.map((r) => r.seq)])).toEqual([['a', [3, 4]], ['b', [1]]]);
    release[1]();
    expect(await Promise.all(later)).toEqual(['stored', 'stored']);
  });

  it('stores none of a run\'s queued batches once one of its batches was fenced', async () => {
    const { repo, statements, release } = fakeRepo(new Set(['a']));
    const writer = new RunEventWriter(repo);
    const run = { failed: null };
    const first = writer.enqueue({ requestId: 'a', rows: rows(1), closed: false, run }, 'me').catch((e: Error) => e);
    await tick();
    const next = writer.enqueue({ requestId: 'a', rows: rows(2), closed: false, run }, 'me').catch((e: Error) => e);
    const other = settled(writer.enqueue({ requestId: 'b', rows: rows(1), closed: false, run: { failed: null } }, 'me'));
    release[0]();
    expect(await first).toBeInstanceOf(LeaseLostError);
    expect(await next).toBeInstanceOf(LeaseLostError);
    await tick();
    expect(statements[1].map((s) => s.requestId)).toEqual(['b']);
    release[1]();
    expect(await other).toBe('stored');
  });
});
