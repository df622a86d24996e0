import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { documentationFiles } from './markdown-lines';

const ROOT = join(__dirname, '..', '..');

/** A heading's anchor as GitHub renders it: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, (c) => (c === '_' ? '_' : ''))
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown text (headings outside fenced code; repeated headings get -1, -2, …). */
export function anchors(text: string): Set<string> {
  const out = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const m = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]);
    let a = base;
    for (let n = 1; out.has(a); n++) a = `${base}-${n}`;
    out.add(a);
  }
  return out;
}

/** Links `[text](#a)` and `[text](other.md#a)` whose anchor the target file does not have. */
export function brokenAnchors(file: string, text: string, read: (path: string) => string | undefined): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/\]\(([^)\s]*?\.md)?#([^)\s]+)\)/g)) {
    const target = m[1] ? normalize(join(dirname(file), m[1])) : file;
    const body = read(target);
    if (body === undefined) continue; // a missing file is another check's business
    if (!anchors(body).has(decodeURIComponent(m[2]))) out.push(`${file}: ${m[1] ?? ''}#${m[2]}`);
  }
  return out;
}

const readRepo = (path: string) => (existsSync(join(ROOT, path)) ? readFileSync(join(ROOT, path), 'utf8') : undefined);

describe('Markdown anchors', () => {
  it('every #anchor link in a tracked Markdown file names a heading of its target', () => {
    const broken = documentationFiles(ROOT).flatMap((f) => brokenAnchors(f, readRepo(f)!, readRepo));
    expect(broken).toEqual([]);
  });

  it('reports a link to a heading that does not exist, and accepts one that does (self-test)', () => {
    const docs: Record<string, string> = { 'a.md': '# Run control\n## Events `done`\nsee [x](#forks), [y](#run-control), [z](b.md#events-done)', 'b.md': '## Events `done`' };
    expect(brokenAnchors('a.md', docs['a.md'], (p) => docs[p])).toEqual(['a.md: #forks']);
  });
});
