import fc from 'fast-check';
import { ToolIndex, type IndexableTool } from './tool-index';

/** The built-ins (docs/API.md) plus a weather and an MCP-style maths tool, with realistic schemas. */
const TOOLS: IndexableTool[] = [
  {
    name: 'list_files',
    description: 'Lists the entries of a folder in the project workspace.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'Folder path relative to the project root', default: '.' },
        recursive: { type: 'boolean', description: 'Also list sub-folders', default: false },
      },
    },
    origin: 'builtin',
  },
  {
    name: 'read_file',
    description: 'Reads a text file from the project workspace and returns its content.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'File path relative to the project root' },
        maxBytes: { type: 'integer', description: 'Maximum number of bytes to read', default: 65536 },
      },
      required: ['path'],
    },
    origin: 'builtin',
  },
  {
    name: 'web_search',
    description: 'Searches the web and returns result titles, URLs and snippets.',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string', description: 'Search terms' }, maxResults: { type: 'integer', default: 5 } },
      required: ['query'],
    },
    origin: 'builtin',
  },
  {
    name: 'fetch_page',
    description: 'Downloads an http(s) page and returns it as readable text.',
    parameters: {
      type: 'object',
      properties: { url: { type: 'string', description: 'Address of the web page' }, maxChars: { type: 'integer' } },
      required: ['url'],
    },
    origin: 'builtin',
  },
  {
    name: 'get_weather',
    description: 'Current weather conditions for a city.',
    parameters: {
      type: 'object',
      properties: {
        location: { type: 'string', description: 'City and country, e.g. Paris, France' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      },
      required: ['location'],
    },
    origin: 'mcp:weather',
  },
  {
    name: 'math__factorial',
    description: 'Calculate the factorial of a non-negative integer.',
    parameters: { type: 'object', properties: { n: { type: 'integer', description: 'The number' } }, required: ['n'] },
    origin: 'mcp:math',
  },
];

function build(tools: IndexableTool[] = TOOLS): ToolIndex {
  const index = new ToolIndex();
  for (const t of tools) index.add(t);
  return index;
}

const names = (index: ToolIndex, q: string, k = 10, min = 0) => index.search(q, k, min).map((h) => h.name);

describe('ToolIndex ranking', () => {
  const index = build();

  it.each([
    ['read the contents of a file', 'read_file'],
    ['open docs/roadmap.md and show me its content', 'read_file'],
    ['list the files in the docs folder', 'list_files'],
    ['search the web for the latest Node.js release', 'web_search'],
    ['download the page at https://example.com and give me its text', 'fetch_page'],
    ["what's the weather like in Paris?", 'get_weather'],
    ['is it cold in Oslo? answer in fahrenheit', 'get_weather'],
    ['compute the factorial of 10', 'math__factorial'],
    ['math factorial', 'math__factorial'],
  ])('"%s" → %s first', (query, expected) => {
    expect(names(index, query)[0]).toBe(expected);
  });

  it('returns names, origins and absolute scores in 0..1, best first', () => {
    const hits = index.search('read a file from the project', 5);
    expect(hits.length).toBeGreaterThan(1);
    expect(hits[0].score).toBeGreaterThan(0.5);
    expect(hits[0].score).toBeLessThan(1);
    expect(hits.find((h) => h.name === 'read_file')?.origin).toBe('builtin');
    for (let i = 1; i < hits.length; i++) {
      expect(hits[i].score).toBeLessThanOrEqual(hits[i - 1].score);
      expect(hits[i].score).toBeGreaterThan(0);
    }
  });

  it('does not depend on the order tools were added in', () => {
    fc.assert(
      fc.property(fc.shuffledSubarray(TOOLS, { minLength: TOOLS.length, maxLength: TOOLS.length }), (order) => {
        const other = build(order);
        for (const q of ['read a file', 'weather in Paris', 'web page text', 'project folder path']) {
          const a = index.search(q, 6);
          const b = other.search(q, 6);
          expect(b.map((h) => h.name)).toEqual(a.map((h) => h.name));
          b.forEach((h, i) => expect(h.score).toBeCloseTo(a[i].score, 9));
        }
      }),
      { numRuns: 25 },
    );
  });
});

describe('ToolIndex limits', () => {
  const index = build();

  it('gives no candidates for an empty, blank, punctuation or stop-word-only query', () => {
    for (const q of ['', '   ', '?!', 'what is the', 'can you please do it for me']) {
      expect(index.search(q, 5)).toEqual([]);
    }
  });

  it('gives no candidates when nothing matches', () => {
    expect(index.search('zebra xylophone quasar', 5)).toEqual([]);
  });

  it('bounds k: < 1 or not a number gives nothing, fractions are floored, more than matches is fine', () => {
    const q = 'file folder page web weather factorial';
    expect(index.search(q, 0)).toEqual([]);
    expect(index.search(q, -3)).toEqual([]);
    expect(index.search(q, Number.NaN)).toEqual([]);
    expect(index.search(q, 1)).toHaveLength(1);
    expect(index.search(q, 2.9)).toHaveLength(2);
    const all = index.search(q, 1000);
    expect(all.length).toBeLessThanOrEqual(TOOLS.length);
    expect(new Set(all.map((h) => h.name)).size).toBe(all.length);
  });

  it('keeps only hits scoring at least minScore', () => {
    const q = 'read a file, list the folder, fetch a web page or get the weather';
    const all = index.search(q, 10);
    expect(all.length).toBeGreaterThan(2);
    const cut = (all[1].score + all[all.length - 1].score) / 2;
    const kept = index.search(q, 10, cut);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(all.length);
    expect(kept.every((h) => h.score >= cut)).toBe(true);
    expect(kept).toEqual(all.filter((h) => h.score >= cut));
    // a request that mixes four tasks: the best tool explains only part of it
    expect(all[0].score).toBeLessThan(1);
    expect(index.search(q, 10, all[0].score).map((h) => h.name)).toEqual([all[0].name]);
    // a threshold above what the best tool explains leaves no candidate
    expect(index.search(q, 10, all[0].score + 0.01)).toEqual([]);
  });

  it("gives a tool the same score whatever the other candidates (absolute, not relative to the best)", () => {
    const q = 'read a file from the project';
    const [best, ...rest] = index.search(q, 5);
    const without = index.search(q, 5, 0, (name) => name !== best.name);
    for (const h of rest) expect(without.find((w) => w.name === h.name)?.score).toBe(h.score);
  });

  it('scores a request lower the more of its words no tool has, so a threshold refuses a weak match', () => {
    const [plain, argument, mostlyUnknown] = ['list files', 'list the files in Zanzibar', 'zorblax quantum page flibbertigibbet'].map((q) => index.search(q, 1)[0]);
    expect(plain).toMatchObject({ name: 'list_files' });
    expect(argument).toMatchObject({ name: 'list_files' });
    expect(argument.score).toBeLessThan(plain.score);
    expect(argument.score).toBeGreaterThan(0.5);
    // one word of four matches a tool: a hit, but a weak one
    expect(mostlyUnknown).toMatchObject({ name: 'fetch_page' });
    expect(mostlyUnknown.score).toBeLessThan(0.3);
    expect(index.search('zorblax quantum page flibbertigibbet', 5, 0.3)).toEqual([]);
    expect(names(index, 'list the files in Zanzibar', 5, 0.3)[0]).toBe('list_files');
  });

  it('applies a filter before taking the top k', () => {
    const hits = index.search('read the text file from the web page', 2, 0, (name) => name !== 'read_file');
    expect(hits.map((h) => h.name)).not.toContain('read_file');
    expect(hits).toHaveLength(2);
    expect(hits[0].score).toBeGreaterThan(0);
    expect(hits[0].score).toBeGreaterThanOrEqual(hits[1].score);
  });

  it('survives a very long request', () => {
    const q = `${'please read the file and then '.repeat(400)} compute the factorial`;
    const hits = index.search(q, 3);
    expect(hits.length).toBeGreaterThan(0);
  });
});

describe('ToolIndex incremental updates', () => {
  it('adds one tool at a time and counts them', () => {
    const index = new ToolIndex();
    expect(index.size).toBe(0);
    expect(index.search('file', 5)).toEqual([]);
    index.add(TOOLS[0]);
    expect(index.size).toBe(1);
    expect(names(index, 'list files')).toEqual(['list_files']);
    index.add(TOOLS[1]);
    expect(index.size).toBe(2);
    expect(names(index, 'read a file')[0]).toBe('read_file');
  });

  it('never returns a removed tool, whatever the query', () => {
    const index = build();
    expect(index.remove('get_weather')).toBe(true);
    expect(index.remove('get_weather')).toBe(false);
    expect(index.remove('no_such_tool')).toBe(false);
    expect(index.has('get_weather')).toBe(false);
    expect(index.size).toBe(TOOLS.length - 1);
    for (const q of ['weather', 'current weather conditions for a city', 'celsius fahrenheit', 'get weather location']) {
      expect(names(index, q, 100)).not.toContain('get_weather');
    }
    // other tools still work
    expect(names(index, 'read the contents of a file')[0]).toBe('read_file');
  });

  it('replaces a tool in place: a changed description changes results', () => {
    const index = build();
    expect(names(index, 'translate this sentence to German')).not.toContain('fetch_page');
    index.replace({ ...TOOLS[3], description: 'Translates a sentence into another language.' });
    expect(index.size).toBe(TOOLS.length);
    expect(names(index, 'translate this sentence to German')[0]).toBe('fetch_page');
    // the words only the old description had are gone
    expect(names(index, 'downloads readable text', 100)).not.toContain('fetch_page');
  });

  it('adding the same name twice keeps one entry', () => {
    const index = build();
    index.add(TOOLS[1]);
    index.add(TOOLS[1]);
    expect(index.size).toBe(TOOLS.length);
    expect(names(index, 'read file', 100).filter((n) => n === 'read_file')).toHaveLength(1);
  });

  it('remove then add again gives the same results as never removing', () => {
    const index = build();
    const before = index.search('weather in Paris in celsius', 6);
    index.remove('get_weather');
    index.remove('read_file');
    index.add(TOOLS[4]);
    index.add(TOOLS[1]);
    const after = index.search('weather in Paris in celsius', 6);
    expect(after.map((h) => h.name)).toEqual(before.map((h) => h.name));
    after.forEach((h, i) => expect(h.score).toBeCloseTo(before[i].score, 9));
  });

  it('clear empties the index', () => {
    const index = build();
    index.clear();
    expect(index.size).toBe(0);
    expect(index.search('file', 5)).toEqual([]);
    index.add(TOOLS[0]);
    expect(names(index, 'list files')).toEqual(['list_files']);
  });

  it('indexes tools with odd definitions without throwing', () => {
    const index = new ToolIndex();
    index.add({ name: 'x', description: '', parameters: {}, origin: 'builtin' });
    index.add({ name: 'noParams', description: 'Does a thing', parameters: undefined as unknown as Record<string, unknown>, origin: 'builtin' });
    expect(index.size).toBe(2);
    expect(names(index, 'thing')).toEqual(['noParams']);
    expect(names(index, 'no params')).toEqual(['noParams']);
  });
});

describe('ToolIndex with Chinese descriptions and requests', () => {
  it('finds a tool described in Chinese from a Chinese request', () => {
    const index = new ToolIndex();
    index.add({ name: 'read_text', description: '读取项目中的文本文件', parameters: { type: 'object', properties: { path: { type: 'string', description: '文件路径' } } }, origin: 'builtin' });
    index.add({ name: 'weather', description: '查询城市的天气预报', parameters: { type: 'object', properties: {} }, origin: 'builtin' });
    expect(index.search('请读取文本文件', 2).map((h) => h.name)[0]).toBe('read_text');
    expect(index.search('明天北京的天气怎么样', 2).map((h) => h.name)[0]).toBe('weather');
  });
});
