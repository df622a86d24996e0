/**
 * SSE responses open in this process right now (the `orion_open_streams` gauge). Kept here,
 * next to the writer, so every route that streams is counted without knowing about metrics.
 */
let open = 0;

export const openStreams = {
  /** counts the stream until its response closes */
  track(res: { once(event: 'close', listener: () => void): unknown }): void {
    open++;
    res.once('close', () => {
      open--;
    });
  },
  get count(): number {
    return open;
  },
};
