/**
 * A turn's hold on its concurrency slots, tied to the HTTP response that started it. The slots
 * go back when the response closes — unless the run goes on without its client (`detach`): then
 * the run service hands over the promise of the run's end, and the slots go back when it settles.
 * Without this, a client could start any number of detached turns by closing each response.
 *
 * Kept by response in a WeakMap so the guard (which takes the slots) and the run service (which
 * knows when the run ends) share nothing but the response object both already have.
 */
interface Hold {
  release: () => void;
  kept: boolean;
}

const holds = new WeakMap<object, Hold>();

/** Called by the guard that took the slots: `release` runs once, when the response closes or the kept run ends. */
export function holdTurn(res: NodeJS.EventEmitter & object, release: () => void): void {
  let done = false;
  const hold: Hold = {
    kept: false,
    release: () => {
      if (done) return;
      done = true;
      release();
    },
  };
  holds.set(res, hold);
  res.once('close', () => {
    if (!hold.kept) hold.release();
  });
}

/** The run goes on after its response: keep the response's slots until `ended` settles. No hold, no effect. */
export function keepTurnUntil(res: object, ended: Promise<unknown>): void {
  const hold = holds.get(res);
  if (!hold) return;
  hold.kept = true;
  ended.then(hold.release, hold.release);
}
