import { deadline, withTimeout } from './abort.util';

describe('deadline', () => {
  afterEach(() => jest.useRealTimers());

  it('fires on the time limit and says so', () => {
    jest.useFakeTimers();
    const parent = new AbortController();
    const d = deadline(parent.signal, 1000);
    jest.advanceTimersByTime(999);
    expect(d.signal.aborted).toBe(false);
    jest.advanceTimersByTime(1);
    expect(d.signal.aborted).toBe(true);
    expect(d.cause).toBe('timeout');
    expect(d.timedOut).toBe(true);
    expect((d.signal.reason as Error).name).toBe('TimeoutError');
    d.dispose();
  });

  it("fires on the caller's abort with the caller's reason, and the later time limit changes nothing", () => {
    jest.useFakeTimers();
    const parent = new AbortController();
    const d = deadline(parent.signal, 1000);
    const why = new Error('client left');
    parent.abort(why);
    expect(d.signal.aborted).toBe(true);
    expect(d.cause).toBe('aborted');
    expect(d.timedOut).toBe(false);
    expect(d.signal.reason).toBe(why);
    jest.advanceTimersByTime(5000);
    expect(d.cause).toBe('aborted');
  });

  it('starts aborted when the caller already aborted, without a timer', () => {
    jest.useFakeTimers();
    const parent = new AbortController();
    parent.abort();
    const d = deadline(parent.signal, 1000);
    expect(d.cause).toBe('aborted');
    expect(jest.getTimerCount()).toBe(0);
  });

  it("reports the owner's own stop as `stopped`, with the given reason", () => {
    const d = deadline(undefined);
    const why = new Error('first complete call');
    d.abort(why);
    expect(d.cause).toBe('stopped');
    expect(d.signal.reason).toBe(why);
  });

  it('uses the reasons it is given per cause', () => {
    jest.useFakeTimers();
    const d = deadline(undefined, 10, { reason: (cause) => new Error(`cut: ${cause}`) });
    jest.advanceTimersByTime(10);
    expect((d.signal.reason as Error).message).toBe('cut: timeout');
  });

  it("dispose clears the timer and stops following the caller's signal", () => {
    jest.useFakeTimers();
    const parent = new AbortController();
    const d = deadline(parent.signal, 1000);
    expect(jest.getTimerCount()).toBe(1);
    d.dispose();
    expect(jest.getTimerCount()).toBe(0);
    parent.abort();
    jest.advanceTimersByTime(5000);
    expect(d.signal.aborted).toBe(false);
    expect(d.cause).toBeUndefined();
  });

  it('without a time limit only follows the caller', () => {
    jest.useFakeTimers();
    const parent = new AbortController();
    const d = deadline(parent.signal);
    expect(jest.getTimerCount()).toBe(0);
    parent.abort();
    expect(d.cause).toBe('aborted');
  });

  it('race settles like the work, or rejects as soon as the deadline fires', async () => {
    const d = deadline(undefined);
    await expect(d.race(Promise.resolve(7))).resolves.toBe(7);
    await expect(d.race(Promise.reject(new Error('tool broke')))).rejects.toThrow('tool broke');
    const hanging = d.race(new Promise(() => undefined));
    d.abort(new Error('stop'));
    await expect(hanging).rejects.toThrow('stop');
    await expect(d.race(Promise.resolve(1))).rejects.toThrow('stop');
  });
});

describe('withTimeout', () => {
  afterEach(() => jest.useRealTimers());

  it("answers with the work's value and leaves no timer behind", async () => {
    jest.useFakeTimers();
    await expect(withTimeout(Promise.resolve('ok'), 1000, 'late')).resolves.toBe('ok');
    expect(jest.getTimerCount()).toBe(0);
  });

  it('answers with the fallback once the time is up', async () => {
    jest.useFakeTimers();
    const answer = withTimeout(new Promise(() => undefined), 1000, 'late');
    jest.advanceTimersByTime(1000);
    await expect(answer).resolves.toBe('late');
    expect(jest.getTimerCount()).toBe(0);
  });

  it('rejects like the work when it fails in time, and clears the timer', async () => {
    jest.useFakeTimers();
    await expect(withTimeout(Promise.reject(new Error('no')), 1000, 'late')).rejects.toThrow('no');
    expect(jest.getTimerCount()).toBe(0);
  });
});
