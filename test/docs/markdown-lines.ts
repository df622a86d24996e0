import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const MAX_PROSE_LINE = 160;

export interface LongLine {
  file: string;
  line: number;
  length: number;
}

/** CommonMark's fence: three or more backticks or tildes, indented by anything (fences inside list items are indented). */
const FENCE = /^\s*(`{3,}|~{3,})/;

/**
 * The lines of one Markdown text longer than `max` characters (code points, so "→" counts once)
 * outside fenced code blocks and table rows: those two may run long because rewrapping them
 * would change what they show, while a prose line can always be wrapped without changing the
 * rendered text. marked, already a dependency, ships only an ES module and a browser bundle,
 * which Jest here cannot load untransformed; fences and table rows are all this rule needs.
 */
export function longProseLines(text: string, file: string, max = MAX_PROSE_LINE): LongLine[] {
  const found: LongLine[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, index) => {
    const opener = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      // a fence closes with the same character, at least as many of it, and nothing after
      if (opener && opener[0] === fence[0] && opener.length >= fence.length && line.trim() === opener) fence = undefined;
      return;
    }
    if (opener) {
      fence = opener;
      return;
    }
    if (line.trimStart().startsWith('|')) return;
    const length = [...line].length;
    if (length > max) found.push({ file, line: index + 1, length });
  });
  return found;
}

/**
 * Every Markdown file git tracks, as paths relative to the repository root: a file added
 * anywhere (a fixture's README, bench/README.md) is checked without being listed here.
 */
export function documentationFiles(root: string): string[] {
  const out = execFileSync('git', ['ls-files', '-z', '--', '*.md'], { cwd: root, encoding: 'utf8' });
  return out.split('\0').filter(Boolean).sort();
}

export function longProseLinesIn(root: string, files: string[]): LongLine[] {
  return files.flatMap((file) => longProseLines(readFileSync(join(root, file), 'utf8'), file));
}
