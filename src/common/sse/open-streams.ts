/**
 * SSE responses open in this process right now (the `orion_open_streams` gauge). Kept here,
 * next to the writer, so every route that streams is counted without knowing about metrics.
 */
let open = 0;

export const openStreams = {
  opened(): void {
    open++;
  },
  closed(): void {
    open = Math.max(0, open - 1);
  },
  get count(): number {
    return open;
  },
};
