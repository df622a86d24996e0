/** Retrieval metrics and fetch statuses of the chat page's sources panel (public/assets/sources.js). */
type Tool = { name: string; status: string; isError: boolean; outcome?: string; params?: unknown };
const sources = require('./public/assets/sources.js') as {
  retrievalSummary: (ev: unknown) => { returned: number | null; used: number; candidates: number | null; confidence: { text: string; level: string } | null; calls: number } | null;
  withFetchStatus: (ev: unknown, tools: Tool[]) => { data: Array<Record<string, any>>; webCount?: number };
};
const turn = require('./public/assets/turn-state.js') as {
  createTurnState: () => Record<string, any>;
  applyEvent: (s: Record<string, any>, type: string, data: Record<string, unknown>) => boolean;
  isErrorStep: (t: Tool) => boolean;
};
const { retrievalSummary, withFetchStatus } = sources;

describe('retrievalSummary', () => {
  it('reads returned and candidates from the metrics, used from the cited knowledge-base sources', () => {
    const ev = { data: [{ type: 'rag', title: 'a' }, { type: 'web', title: 'b' }], ragCount: 1, confidence: 'medium', metrics: { method: 'fts', returned: 5, candidates: 12, ragCalls: 2 } };
    expect(retrievalSummary(ev)).toEqual({ returned: 5, used: 1, candidates: 12, confidence: { text: 'Medium', level: 'medium' }, calls: 2 });
  });

  it('is null when no retrieval ran', () => {
    expect(retrievalSummary({ data: [], ragCount: 0, confidence: 'high' })).toBeNull();
    // the service sends metrics: null for such a turn (and left it out before)
    expect(retrievalSummary({ data: [], ragCount: 0, confidence: 'high', metrics: null })).toBeNull();
  });
});

describe('withFetchStatus', () => {
  const ev = {
    data: [
      { type: 'rag', title: 'r', path: 'docs/a.md' },
      { type: 'web', title: 'A', url: 'https://a.example/' },
      { type: 'web', title: 'C', url: 'https://c.example/' },
      { type: 'web', title: 'D', url: 'https://d.example/' },
    ],
    webCount: 3,
  };
  const tools: Tool[] = [
    { name: 'web_search', status: 'completed', isError: false, params: { query: 'x' } },
    { name: 'fetch_page', status: 'failed', isError: true, outcome: 'timeout', params: { url: 'https://a.example/' } },
    { name: 'fetch_page', status: 'completed', isError: false, params: { url: 'https://a.example/' } },
    { name: 'fetch_page', status: 'failed', isError: true, outcome: 'timeout', params: { url: 'https://b.example/' } },
    { name: 'fetch_pages_batch', status: 'completed', isError: false, params: { urls: ['https://d.example/', 'https://e.example/'] } },
  ];

  it('marks fetched, never-fetched and failed pages; a later success wins; failed pages get their own card', () => {
    const out = withFetchStatus(ev, tools);
    const byUrl = Object.fromEntries(out.data.filter((x) => x.type === 'web').map((x) => [x.url, x.fetch]));
    expect(byUrl).toEqual({
      'https://a.example/': { state: 'fetched' },
      'https://c.example/': { state: 'not_fetched' },
      'https://d.example/': { state: 'fetched' },
      'https://b.example/': { state: 'failed', outcome: 'timeout' },
      'https://e.example/': { state: 'failed' },
    });
    expect(out.data.find((x) => x.url === 'https://b.example/')).toMatchObject({ title: 'b.example' });
    expect(out.webCount).toBe(5);
    expect(out.data[0]).toEqual(ev.data[0]);
  });

  it('shows a page still being fetched as fetching', () => {
    const out = withFetchStatus({ data: [] }, [{ name: 'fetch_page', status: 'calling', isError: false, params: { url: 'https://a.example/' } }]);
    expect(out.data).toEqual([]);
    const running = withFetchStatus({ data: [{ type: 'web', title: 'A', url: 'https://a.example/' }] }, [{ name: 'fetch_page', status: 'calling', isError: false, params: { url: 'https://a.example/' } }]);
    expect(running.data[0].fetch).toEqual({ state: 'fetching' });
  });
});

describe('tool error steps', () => {
  const ids = { requestId: 'r1', projectId: 'default', conversationId: 'c1' };

  it("a tool_phase error stage makes the tool an error step with its message, even if it then reports completed", () => {
    const s = turn.createTurnState();
    turn.applyEvent(s, 'tool_progress', { ...ids, seq: 1, tool: 'web_search', callId: 'c1', action: 'calling', params: { query: 'q' }, isError: false });
    turn.applyEvent(s, 'tool_phase', { ...ids, seq: 2, toolId: 'web_search', stage: 'searching', message: 'Searching the web…' });
    expect(turn.isErrorStep(s.tools[0])).toBe(false);
    turn.applyEvent(s, 'tool_phase', { ...ids, seq: 3, toolId: 'web_search', stage: 'error', message: 'SearXNG answered HTTP 502' });
    turn.applyEvent(s, 'tool_progress', { ...ids, seq: 4, tool: 'web_search', callId: 'c1', action: 'completed', isError: false, outcome: 'success' });
    expect(s.tools[0]).toMatchObject({ status: 'failed', isError: true, errorMessage: 'SearXNG answered HTTP 502', params: { query: 'q' } });
    expect(turn.isErrorStep(s.tools[0])).toBe(true);
  });

  it('a failed result is an error step; a refused duplicate is not', () => {
    expect(turn.isErrorStep({ name: 'read_file', status: 'failed', isError: true, outcome: 'validation_error' })).toBe(true);
    expect(turn.isErrorStep({ name: 'read_file', status: 'refused', isError: false })).toBe(false);
    expect(turn.isErrorStep({ name: 'read_file', status: 'refused', isError: true })).toBe(true);
    expect(turn.isErrorStep({ name: 'read_file', status: 'completed', isError: false })).toBe(false);
  });

  it('a call id reused by a later step is a new tool, not the earlier failure', () => {
    const s = turn.createTurnState();
    turn.applyEvent(s, 'tool_progress', { ...ids, seq: 1, tool: 'read_file', callId: 'call_0', action: 'calling', isError: false });
    turn.applyEvent(s, 'tool_phase', { ...ids, seq: 2, toolId: 'read_file', stage: 'error', message: 'no such file' });
    turn.applyEvent(s, 'tool_progress', { ...ids, seq: 3, tool: 'read_file', callId: 'call_0', action: 'failed', isError: true, outcome: 'validation_error' });
    turn.applyEvent(s, 'tool_progress', { ...ids, seq: 4, tool: 'read_file', callId: 'call_0', action: 'calling', isError: false });
    turn.applyEvent(s, 'tool_progress', { ...ids, seq: 5, tool: 'read_file', callId: 'call_0', action: 'completed', isError: false, outcome: 'success' });
    expect(s.tools.map((t: Tool) => [t.status, turn.isErrorStep(t)])).toEqual([
      ['failed', true],
      ['completed', false],
    ]);
  });
});
