import { join } from 'node:path';
import { documentationFiles, longProseLines, longProseLinesIn, MAX_PROSE_LINE } from './markdown-lines';

const ROOT = join(__dirname, '..', '..');
const long = (char: string) => char.repeat(MAX_PROSE_LINE + 1);

describe('Markdown documentation lines', () => {
  it(`no Markdown file git tracks has a prose line over ${MAX_PROSE_LINE} characters (tables and fenced code may run long)`, () => {
    const files = documentationFiles(ROOT);
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/API.md', 'docs/ARCHITECTURE.md', 'bench/README.md', 'test/fixtures/llm-streams/README.md']));
    const found = longProseLinesIn(ROOT, files).map(({ file, line, length }) => `${file}:${line} is ${length} characters`);
    expect(found).toEqual([]);
  });

  describe('the rule', () => {
    it('reports a long prose line, a long list item and a long heading, with their line numbers', () => {
      const text = ['# Title', long('a'), '', `- ${long('b')}`, `## ${long('c')}`, 'short'].join('\n');
      expect(longProseLines(text, 'x.md').map((l) => l.line)).toEqual([2, 4, 5]);
    });

    it('accepts a line of exactly the limit, counting characters rather than UTF-16 units or bytes', () => {
      expect(longProseLines('a'.repeat(MAX_PROSE_LINE), 'x.md')).toEqual([]);
      expect(longProseLines('→'.repeat(MAX_PROSE_LINE), 'x.md')).toEqual([]);
      expect(longProseLines('𝄞'.repeat(MAX_PROSE_LINE), 'x.md')).toEqual([]);
      expect(longProseLines('𝄞'.repeat(MAX_PROSE_LINE + 1), 'x.md')).toEqual([{ file: 'x.md', line: 1, length: MAX_PROSE_LINE + 1 }]);
    });

    it('lets table rows and fenced code (backticks, tildes, indented in a list) run long', () => {
      const text = [
        `| a | ${long('t')} |`,
        '```bash',
        long('c'),
        '```',
        '- item',
        '  ~~~~',
        `  ${long('d')}`,
        '  ```',
        `  ${long('e')}`,
        '  ~~~~',
        'after',
      ].join('\n');
      expect(longProseLines(text, 'x.md')).toEqual([]);
    });

    it('checks prose again after a fence closes, and a longer fence closes only with as many marks', () => {
      const text = ['````', '```', long('x'), '````', long('y')].join('\n');
      expect(longProseLines(text, 'x.md').map((l) => l.line)).toEqual([5]);
    });
  });
});
