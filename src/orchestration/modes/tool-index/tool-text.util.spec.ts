import fc from 'fast-check';
import { analyze, splitIdentifier, stem, STOP_WORDS, summarizeParameters } from './tool-text.util';

describe('splitIdentifier', () => {
  it.each([
    ['list_files', ['list', 'files']],
    ['math__factorial', ['math', 'factorial']],
    ['math.factorial', ['math', 'factorial']],
    ['fetch-page', ['fetch', 'page']],
    ['getFilmDetails', ['get', 'film', 'details']],
    ['RentalCars_3_GetCarsAvailable', ['rental', 'cars', '3', 'get', 'cars', 'available']],
    ['HTTPServer', ['http', 'server']],
    ['parseURLQuery', ['parse', 'url', 'query']],
    ['sha256sum', ['sha', '256', 'sum']],
    ['version_api.VersionApi.get_version', ['version', 'api', 'version', 'api', 'get', 'version']],
    ['Divinópolis', ['divinopolis']],
    ['', []],
    ['  __..--  ', []],
  ])('%s → %j', (input, expected) => {
    expect(splitIdentifier(input)).toEqual(expected);
  });

  it('keeps scripts without case intact', () => {
    expect(splitIdentifier('天气 预报')).toEqual(['天气', '预报']);
  });

  it('always yields non-empty lowercase words of letters and digits only', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (s) => {
        for (const w of splitIdentifier(s)) {
          expect(w.length).toBeGreaterThan(0);
          expect(w).toBe(w.toLowerCase());
          expect(w).toMatch(/^[\p{L}\p{N}]+$/u);
        }
      }),
    );
  });
});

describe('stem', () => {
  it('maps inflections of one word to one key', () => {
    const key = (...words: string[]) => new Set(words.map(stem));
    expect(key('calculate', 'calculates', 'calculated', 'calculating', 'calculation', 'calculations').size).toBe(1);
    expect(key('book', 'books', 'booking', 'booked').size).toBe(1);
    expect(key('city', 'cities').size).toBe(1);
    expect(key('file', 'files').size).toBe(1);
    expect(key('search', 'searches', 'searching', 'searched').size).toBe(1);
    expect(key('stop', 'stopped', 'stopping').size).toBe(1);
  });

  it('leaves short words, words ending in -ss/-us/-is and non-ASCII words alone', () => {
    for (const w of ['bus', 'ring', 'address', 'status', 'analysis', 'café', 'abc123']) {
      expect(stem(w)).toBe(w);
    }
  });

  it('never returns an empty or longer string', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z]{1,20}$/), (w) => {
        const s = stem(w);
        expect(s.length).toBeGreaterThan(0);
        expect(s.length).toBeLessThanOrEqual(w.length);
      }),
    );
  });
});

describe('analyze', () => {
  it('splits, lowercases, drops stop words, numbers and single letters, and stems', () => {
    expect(analyze('Could you please calculate the factorial of 5 for me?')).toEqual(['calculat', 'factorial']);
    expect(analyze('get_current_weather')).toEqual(['get', 'current', 'weather']);
  });

  it('gives nothing for empty, punctuation-only or stop-word-only text', () => {
    expect(analyze('')).toEqual([]);
    expect(analyze(' ?! ... ')).toEqual([]);
    expect(analyze('what is the one of them')).toEqual(['one']);
    expect(analyze('can you do it for me please')).toEqual([]);
  });

  it('can keep stop words, numbers and the surface form', () => {
    expect(analyze('the 22 files', { stopWords: false, dropNumbers: false, stemming: false })).toEqual(['the', '22', 'files']);
  });

  it('does not list action verbs as stop words', () => {
    for (const verb of ['get', 'find', 'list', 'search', 'create', 'delete', 'read', 'fetch', 'send']) {
      expect(STOP_WORDS.has(verb)).toBe(false);
    }
  });

  it('never throws and never yields blanks', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => {
        for (const t of analyze(s)) expect(t).toMatch(/^[^\s]+$/u);
      }),
    );
  });
});

describe('summarizeParameters', () => {
  it('collects names, descriptions and enum values at every depth', () => {
    const s = summarizeParameters({
      type: 'object',
      properties: {
        location: { type: 'string', description: 'The city and state, e.g. San Francisco, CA' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        options: {
          type: 'object',
          properties: { maxResults: { type: 'integer', description: 'How many results' } },
        },
        tags: { type: 'array', items: { type: 'object', properties: { label: { type: 'string', title: 'Tag label' } } } },
        mode: { anyOf: [{ type: 'string', enum: ['fast'] }, { type: 'integer', enum: [3] }] },
      },
    });
    expect(s.names.split(' ')).toEqual(['location', 'unit', 'options', 'maxResults', 'tags', 'label', 'mode']);
    expect(s.text).toContain('The city and state');
    expect(s.text).toContain('How many results');
    expect(s.text).toContain('Tag label');
    expect(s.enums.split(' ')).toEqual(['celsius', 'fahrenheit', 'fast', '3']);
  });

  it('ignores the top-level description and anything that is not a schema', () => {
    expect(summarizeParameters({ type: 'object', description: 'top', properties: {} })).toEqual({ names: '', text: '', enums: '' });
    expect(summarizeParameters(null)).toEqual({ names: '', text: '', enums: '' });
    expect(summarizeParameters('x')).toEqual({ names: '', text: '', enums: '' });
  });

  it('stops at a bounded depth on deeply nested schemas', () => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 50; i++) schema = { type: 'object', properties: { [`p${i}`]: schema } };
    expect(summarizeParameters(schema).names.split(' ').length).toBeLessThanOrEqual(7);
  });
});

describe('text without spaces between words (Chinese, Japanese)', () => {
  it('is indexed as overlapping character bigrams, mixed text kept apart', () => {
    expect(splitIdentifier('读取文本文件')).toEqual(['读取', '取文', '文本', '本文', '文件']);
    expect(splitIdentifier('read_file 读取')).toEqual(['read', 'file', '读取']);
    expect(splitIdentifier('API调用v2')).toEqual(['api', '调用', 'v', '2']);
    expect(splitIdentifier('한국어 검색')).toEqual(['한국어'.normalize('NFKD'), '검색'.normalize('NFKD')]);
  });
});
