import type { DocType } from './doc-type';

/** A run of a document under one heading. */
export interface Section {
  /** headings from the outermost down to this section's own; empty before the first heading */
  trail: string[];
  /** the section's text, its heading line(s) included, as written */
  text: string;
  /** whether the section holds more than its heading */
  hasBody: boolean;
}

interface Heading {
  level: number;
  title: string;
  /** lines the heading occupies (1, or 2-3 for underlined styles) */
  lines: number;
}

/**
 * Splits a document into sections at its headings:
 * - Markdown: ATX (`## Title`) and setext (`Title` over `===`/`---`) headings, not inside fenced
 *   code blocks (``` or ~~~);
 * - AsciiDoc: `== Title` (level = number of `=`), not inside `----`/`....` delimited blocks;
 * - reStructuredText: a title line underlined (optionally overlined) with one punctuation
 *   character; levels follow the order in which adornment styles first appear, as in docutils;
 * - plain text: one section.
 * Text before the first heading is a section with an empty trail.
 */
export function splitSections(text: string, docType: DocType): Section[] {
  const lines = text.split('\n');
  const sections: Section[] = [];
  const trail: Array<{ level: number; title: string }> = [];
  let current: { trail: string[]; start: number; headingLines: number } = { trail: [], start: 0, headingLines: 0 };
  const detect = detector(docType, lines);

  const close = (end: number) => {
    if (end <= current.start) return;
    const body = lines.slice(current.start + current.headingLines, end).join('\n');
    const whole = lines.slice(current.start, end).join('\n');
    if (whole.trim() === '') return;
    sections.push({ trail: current.trail, text: whole, hasBody: body.trim() !== '' });
  };

  for (let i = 0; i < lines.length; ) {
    const heading = detect(lines, i);
    if (!heading) {
      i++;
      continue;
    }
    close(i);
    while (trail.length > 0 && trail[trail.length - 1].level >= heading.level) trail.pop();
    trail.push({ level: heading.level, title: heading.title });
    current = { trail: trail.map((h) => h.title), start: i, headingLines: heading.lines };
    i += heading.lines;
  }
  close(lines.length);
  return sections;
}

type Detector = (lines: string[], i: number) => Heading | null;

function detector(docType: DocType, lines: string[]): Detector {
  switch (docType) {
    case 'md':
      return markdownDetector(lines);
    case 'adoc':
      return asciidocDetector(lines);
    case 'rst':
      return rstDetector();
    case 'txt':
      return () => null;
  }
}

const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** lines that cannot be a setext heading's text (list items, quotes, tables, indented code, HTML) */
const NOT_SETEXT_TEXT = /^(?: {4,}|\t| {0,3}(?:[-*+>|<]|\d+[.)])(?:\s|$))/;

function markdownDetector(lines: string[]): Detector {
  const fenced = fencedLines(lines);
  return (ls, i) => {
    if (fenced[i]) return null;
    const atx = ATX.exec(ls[i]);
    if (atx) return { level: atx[1].length, title: cleanTitle(atx[2] ?? ''), lines: 1 };
    const next = ls[i + 1];
    const prev = i > 0 ? ls[i - 1] : '';
    if (next !== undefined && !fenced[i + 1] && SETEXT.test(next) && ls[i].trim() !== '' && prev.trim() === '' && !NOT_SETEXT_TEXT.test(ls[i])) {
      return { level: next.trim()[0] === '=' ? 1 : 2, title: cleanTitle(ls[i]), lines: 2 };
    }
    return null;
  };
}

/** Which lines are fence lines or inside a fenced code block (an unclosed fence runs to the end). */
function fencedLines(lines: string[]): boolean[] {
  const fenced: boolean[] = new Array(lines.length).fill(false);
  let open: string | null = null;
  lines.forEach((line, j) => {
    const m = FENCE.exec(line);
    if (open === null) {
      if (m) {
        open = m[1];
        fenced[j] = true;
      }
      return;
    }
    fenced[j] = true;
    if (m && m[1][0] === open[0] && m[1].length >= open.length && line.trim() === m[1]) open = null;
  });
  return fenced;
}

const ADOC_HEADING = /^(={1,6})[ \t]+(\S.*)$/;
const ADOC_DELIMITER = /^(-{4,}|\.{4,}|_{4,}|\+{4,}|\/{4,}|={4,})[ \t]*$/;

function asciidocDetector(lines: string[]): Detector {
  // lines of delimited blocks (listing, literal, quote, passthrough, comment, example) hold no headings
  const inBlock: boolean[] = new Array(lines.length).fill(false);
  let open: string | null = null;
  lines.forEach((line, j) => {
    const m = ADOC_DELIMITER.exec(line);
    if (m) {
      inBlock[j] = true;
      open = open === null ? m[1] : open === m[1] ? null : open;
    } else {
      inBlock[j] = open !== null;
    }
  });
  return (ls, i) => {
    if (inBlock[i]) return null;
    const m = ADOC_HEADING.exec(ls[i]);
    return m ? { level: m[1].length, title: cleanTitle(m[2]), lines: 1 } : null;
  };
}

const RST_ADORNMENT = /^([!-/:-@[-`{-~])\1{2,}[ \t]*$/;

function rstDetector(): Detector {
  const styles: string[] = [];
  const levelOf = (style: string) => {
    let idx = styles.indexOf(style);
    if (idx < 0) idx = styles.push(style) - 1;
    return idx + 1;
  };
  return (lines, i) => {
    const line = lines[i];
    const over = RST_ADORNMENT.exec(line);
    // overline + title + underline
    if (over && i + 2 < lines.length) {
      const title = lines[i + 1].trim();
      const under = RST_ADORNMENT.exec(lines[i + 2]);
      if (title && under && under[1] === over[1] && lines[i + 2].trim().length >= title.length) {
        return { level: levelOf(`over${over[1]}`), title: cleanTitle(title), lines: 3 };
      }
    }
    // title + underline (the title is not itself an adornment, and is preceded by a blank line)
    const next = lines[i + 1];
    const prev = i > 0 ? lines[i - 1] : '';
    if (line.trim() && !over && next !== undefined && prev.trim() === '' && !/^\s/.test(line)) {
      const under = RST_ADORNMENT.exec(next);
      if (under && next.trim().length >= line.trim().length) return { level: levelOf(under[1]), title: cleanTitle(line), lines: 2 };
    }
    return null;
  };
}

/** A heading's plain text: inline Markdown markers and trailing anchors removed, whitespace collapsed. */
function cleanTitle(raw: string): string {
  return raw
    .replace(/\{#[^}]*\}\s*$/, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[*_`]+/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}
