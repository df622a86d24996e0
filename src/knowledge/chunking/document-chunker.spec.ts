import fc from 'fast-check';
import { docTypeOf } from './doc-type';
import { CHUNK_MAX_CHARS, CHUNK_OVERLAP_CHARS, chunkDocument, splitWithOverlap } from './document-chunker';
import { splitSections } from './sections';

describe('docTypeOf', () => {
  it.each([
    ['README.md', 'md'],
    ['guide.MARKDOWN', 'md'],
    ['page.mdx', 'md'],
    ['notes.txt', 'txt'],
    ['index.rst', 'rst'],
    ['manual.adoc', 'adoc'],
    ['main.ts', null],
    ['image.png', null],
    ['Makefile', null],
  ])('%s → %s', (name, type) => expect(docTypeOf(name)).toBe(type));
});

describe('splitSections', () => {
  it('Markdown: ATX and setext headings build a trail; code fences hide headings', () => {
    const md = [
      'Intro line.',
      '',
      '# Guide',
      'Welcome.',
      '',
      '## Install *quickly*',
      '```sh',
      '# not a heading',
      'npm install',
      '```',
      '',
      'Usage',
      '-----',
      'Run it.',
      '',
      '# Other',
      'x',
    ].join('\n');
    const sections = splitSections(md, 'md');
    expect(sections.map((s) => s.trail)).toEqual([[], ['Guide'], ['Guide', 'Install quickly'], ['Guide', 'Usage'], ['Other']]);
    expect(sections[2].text).toContain('# not a heading');
    expect(sections.every((s) => s.hasBody)).toBe(true);
  });

  it('AsciiDoc: = headings outside delimited blocks', () => {
    const adoc = ['= Manual', 'Intro', '', '== Setup', '----', '== inside a listing', '----', 'Done'].join('\n');
    expect(splitSections(adoc, 'adoc').map((s) => s.trail)).toEqual([['Manual'], ['Manual', 'Setup']]);
  });

  it('reStructuredText: underlined (and overlined) titles, levels by first appearance', () => {
    const rst = ['=====', 'Title', '=====', '', 'Intro.', '', 'Install', '-------', '', 'Steps.', '', 'Linux', '~~~~~', '', 'apt.', '', 'Usage', '-----', '', 'Run.'].join('\n');
    expect(splitSections(rst, 'rst').map((s) => s.trail)).toEqual([['Title'], ['Title', 'Install'], ['Title', 'Install', 'Linux'], ['Title', 'Usage']]);
  });

  it('plain text is one section', () => {
    expect(splitSections('# not markdown\nhello', 'txt')).toEqual([{ trail: [], text: '# not markdown\nhello', hasBody: true }]);
  });
});

describe('chunkDocument', () => {
  it('titles chunks with the heading trail, or the file name before the first heading', () => {
    const chunks = chunkDocument('Preface.\n\n# Installation\n\nRun the installer.\n\n## Linux\n\nUse apt.\n', 'md', 'install.md');
    expect(chunks).toEqual([
      { index: 0, title: 'install.md', content: 'Preface.' },
      { index: 1, title: 'Installation', content: '# Installation\n\nRun the installer.' },
      { index: 2, title: 'Installation › Linux', content: '## Linux\n\nUse apt.' },
    ]);
  });

  it('a heading with nothing under it is no chunk, and front matter names the document', () => {
    const chunks = chunkDocument('---\ntitle: "Release notes"\ndate: 2026\n---\nFirst line.\n# Empty\n## Filled\nText.\n', 'md', 'notes.md');
    expect(chunks.map((c) => c.title)).toEqual(['Release notes', 'Empty › Filled']);
    expect(chunks[0].content).toBe('First line.');
  });

  it('a document of headings only is one chunk of its headings, so it can still be found', () => {
    expect(chunkDocument('# Roadmap\n', 'md', 'roadmap.md')).toEqual([{ index: 0, title: 'roadmap.md', content: 'Roadmap' }]);
    expect(chunkDocument('# Plan\n## Q1\n## Q2\n', 'md', 'plan.md').map((c) => c.content)).toEqual(['Plan\nQ1\nQ2']);
    expect(chunkDocument('', 'md', 'empty.md')).toEqual([]);
  });

  it('plain text files are titled by their file name; CRLF and a BOM are normalized', () => {
    expect(chunkDocument('\uFEFFline one\r\nline two\r\n', 'txt', 'notes.txt')).toEqual([{ index: 0, title: 'notes.txt', content: 'line one\nline two' }]);
  });

  it('splits a long section at paragraphs, with overlap from the previous piece', () => {
    const paragraphs = Array.from({ length: 12 }, (_, i) => `Paragraph ${i} ` + 'lorem ipsum dolor sit amet '.repeat(8).trim() + '.');
    const chunks = chunkDocument(`# Long\n\n${paragraphs.join('\n\n')}`, 'md', 'long.md');
    expect(chunks.length).toBeGreaterThan(2);
    for (const c of chunks) {
      expect(c.title).toBe('Long');
      expect(c.content.length).toBeLessThanOrEqual(CHUNK_MAX_CHARS);
    }
    // every piece after the first starts with the end of the previous one
    for (let i = 1; i < chunks.length; i++) {
      const head = chunks[i].content.slice(0, 40);
      expect(chunks[i - 1].content).toContain(head);
    }
    expect(chunks.map((c) => c.index)).toEqual(chunks.map((_, i) => i));
  });

  it('cuts a single enormous word by force', () => {
    const chunks = chunkDocument('x'.repeat(5000), 'txt', 'x.txt');
    expect(chunks.length).toBeGreaterThanOrEqual(5);
    expect(chunks.every((c) => c.content.length <= CHUNK_MAX_CHARS)).toBe(true);
  });

  it('property: chunks respect the size limit, keep every word, and are numbered in order', () => {
    const word = fc.stringMatching(/^[a-z]{1,12}$/);
    const line = fc.oneof(
      fc.array(word, { minLength: 1, maxLength: 30 }).map((ws) => ws.join(' ')),
      word.map((w) => `# ${w}`),
      word.map((w) => `## ${w}`),
      fc.constant(''),
      fc.constant('```'),
      fc.array(word, { minLength: 1, maxLength: 4 }).map((ws) => ws.join('') + '.'),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 120 }), fc.integer({ min: 60, max: 1500 }), (lines, max) => {
        const text = lines.join('\n');
        const chunks = chunkDocument(text, 'md', 'doc.md', { maxChars: max });
        chunks.forEach((c, i) => {
          expect(c.index).toBe(i);
          expect(c.content.length).toBeLessThanOrEqual(max);
          expect(c.content.trim()).toBe(c.content);
          expect(c.content.length).toBeGreaterThan(0);
        });
        const indexed = chunks.map((c) => c.content).join('\n');
        // every word outside headings survives in some chunk (a heading with nothing under it is
        // dropped by design); a run of letters longer than a piece's budget (max minus the overlap)
        // has no place to cut but inside itself, so it is only required up to that length
        const budget = max - Math.min(CHUNK_OVERLAP_CHARS, Math.floor(max / 3));
        const bodyWords = lines.filter((l) => !l.startsWith('#')).join(' ').split(/[^a-z]+/).filter((w) => w && w.length <= budget);
        for (const w of bodyWords) expect(indexed).toContain(w);
      }),
      { numRuns: 200 },
    );
  });
});

describe('splitWithOverlap', () => {
  it('returns short text unchanged', () => {
    expect(splitWithOverlap('short', 100, 20)).toEqual(['short']);
  });

  it('property: pieces are contiguous substrings that cover the text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 3000 }), fc.integer({ min: 30, max: 400 }), (text, max) => {
        const overlap = Math.floor(max / 4);
        const pieces = splitWithOverlap(text, max, overlap);
        for (const p of pieces) {
          expect(p.length).toBeLessThanOrEqual(max);
          expect(text).toContain(p);
        }
        expect(pieces.join('').length).toBeGreaterThanOrEqual(text.length);
      }),
      { numRuns: 300 },
    );
  });
});
