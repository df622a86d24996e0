import { firstValueFrom, lastValueFrom, take, toArray } from 'rxjs';
import { fromGenerator } from './from-generator';

/** A promise with its resolve, to hold a generator inside a step until the test says. */
function gate<T = void>() {
  let open!: (value: T) => void;
  const opened = new Promise<T>((resolve) => (open = resolve));
  return { open, opened };
}

describe('fromGenerator', () => {
  it('emits what the generator yields, in order, then the mapped return value, and completes', async () => {
    async function* gen() {
      yield 1;
      yield 2;
      return 'r';
    }
    const values = await lastValueFrom(fromGenerator(gen(), { each: (n: number) => `v${n}`, last: (r: string) => `last:${r}` }).pipe(toArray()));
    expect(values).toEqual(['v1', 'v2', 'last:r']);
  });

  it('a client that leaves mid-step: the generator is returned (its finally runs) and what it yields after is never emitted', async () => {
    const step = gate<string>();
    const cleaned = gate();
    let afterLate = false;
    async function* gen() {
      try {
        yield 'first';
        yield await step.opened;
        afterLate = true;
        yield 'never';
      } finally {
        cleaned.open();
      }
    }
    const seen: string[] = [];
    let completed = false;
    const first = gate();
    const next = (v: string) => {
      seen.push(v);
      first.open();
    };
    const sub = fromGenerator(gen()).subscribe({ next, complete: () => (completed = true) });
    await first.opened;
    sub.unsubscribe();
    step.open('late');
    await cleaned.opened;
    expect(seen).toEqual(['first']);
    expect(afterLate).toBe(false);
    expect(completed).toBe(false);
  });

  it('an operator that stops after one value: the generator is not advanced again, and its finally runs', async () => {
    let advanced = false;
    const cleaned = gate();
    async function* gen() {
      try {
        yield 'one';
        advanced = true;
        yield 'two';
      } finally {
        cleaned.open();
      }
    }
    expect(await firstValueFrom(fromGenerator(gen()).pipe(take(1)))).toBe('one');
    await cleaned.opened;
    expect(advanced).toBe(false);
  });

  it('abort: aborted in the teardown itself when the client leaves early, never after the generator ended', async () => {
    async function* gen() {
      yield 1;
      yield 2;
    }
    const early = new AbortController();
    await firstValueFrom(fromGenerator(gen(), { abort: early }).pipe(take(1)));
    expect(early.signal.aborted).toBe(true);
    const late = new AbortController();
    await lastValueFrom(fromGenerator(gen(), { abort: late }));
    expect(late.signal.aborted).toBe(false);
  });

  it('a generator that throws: the values before it are emitted, then the same error', async () => {
    const boom = new Error('boom');
    async function* gen() {
      yield 'a';
      throw boom;
    }
    const seen: string[] = [];
    const failed = new Promise<unknown>((resolve) => fromGenerator(gen()).subscribe({ next: (v) => seen.push(v), error: resolve }));
    expect(await failed).toBe(boom);
    expect(seen).toEqual(['a']);
  });
});
