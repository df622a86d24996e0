import type { ToolRunResult } from '../tool-definition';

/** A stage's final answer: the call ends here with this result, the later stages do not run. */
export class Final {
  constructor(readonly result: ToolRunResult) {}
}

/** One step of a call: either the next stage's input or a Final. */
export type Stage<I, O> = (input: I) => O | Final | Promise<O | Final>;

/**
 * The stages of a tool call in order, each handed what the previous one returned, until one
 * returns a Final: `through(x).then(a).then(b).end(c)`. Written as a chain so that the order
 * of the checks reads top to bottom in one place.
 */
export class Pipeline<T> {
  private constructor(private readonly current: Promise<T | Final>) {}

  static from<T>(input: T): Pipeline<T> {
    return new Pipeline(Promise.resolve(input));
  }

  then<O>(stage: Stage<T, O>): Pipeline<O> {
    return new Pipeline(this.current.then((x) => (x instanceof Final ? x : stage(x))));
  }

  async end(last: (input: T) => ToolRunResult | Promise<ToolRunResult>): Promise<ToolRunResult> {
    const x = await this.current;
    return x instanceof Final ? x.result : last(x);
  }
}
