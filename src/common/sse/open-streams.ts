/**
 * SSE responses open in this process right now (the `orion_open_streams` gauge). Kept in
 * common/sse, where every stream route's events are shaped (toMessageEvents), so each is counted
 * without knowing about metrics.
 */
let open = 0;

export const openStreams = {
  /** counts one stream; the returned function ends it (once) */
  open(): () => void {
    open++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      open--;
    };
  },
  get count(): number {
    return open;
  },
};
