import type { DocType } from './doc-type';
import { splitSections } from './sections';

/** One searchable piece of a document. */
export interface DocumentChunk {
  /** position in the document, from 0 */
  index: number;
  /** the heading trail (`Installation › Linux`), or the document's title before its first heading */
  title: string;
  content: string;
}

export interface ChunkOptions {
  /** longest chunk, overlap included */
  maxChars?: number;
  /** text of the previous piece repeated at the start of the next one, when a section is split */
  overlapChars?: number;
}

/**
 * Sizes (characters, not tokens): 1,200 characters is about 300 tokens (4 characters per token,
 * the estimate the context budget uses), so `topK = 5` chunks cost about 1,500 tokens, and a
 * chunk is long enough to hold a procedure or an API entry but short enough that its
 * full-text rank is about one topic. The 200-character overlap (a sentence or two) keeps a
 * sentence cut at a boundary readable in both pieces.
 */
export const CHUNK_MAX_CHARS = 1200;
export const CHUNK_OVERLAP_CHARS = 200;
/** Longest title kept; longer heading trails lose their outer headings. */
export const TITLE_MAX_CHARS = 200;
/** Changes whenever chunking changes, so re-ingesting re-chunks files whose bytes did not change. */
export const CHUNKER_VERSION = 2;

/** Places to cut, best first: paragraphs, lines, sentences, words. */
const SEPARATORS = [/\n[ \t]*\n/g, /\n/g, /(?<=[.!?])[ \t]+/g, /[ \t]+/g];

/**
 * Splits a document into chunks: first into sections at its headings (see splitSections), then
 * each section longer than `maxChars` into pieces at the best available boundary, each piece
 * after the first starting with up to `overlapChars` of the text before it. A section that is a
 * heading alone adds its heading to the trail of what follows and is no chunk of its own, unless
 * the document holds nothing but headings: then its headings are its one chunk, so a new
 * document that is only an outline can still be found.
 *
 * Markdown front matter (`---` … `---` at the top) is dropped; its `title:` names the document.
 */
export function chunkDocument(text: string, docType: DocType, fileName: string, options: ChunkOptions = {}): DocumentChunk[] {
  const maxChars = options.maxChars ?? CHUNK_MAX_CHARS;
  const overlap = Math.min(options.overlapChars ?? CHUNK_OVERLAP_CHARS, Math.floor(maxChars / 3));
  let body = text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  let docTitle = fileName;
  if (docType === 'md') {
    const fm = /^---[ \t]*\n([\s\S]*?)\n(?:---|\.\.\.)[ \t]*(?:\n|$)/.exec(body);
    if (fm) {
      const t = /^title:[ \t]*["']?(.*?)["']?[ \t]*$/m.exec(fm[1]);
      if (t && t[1].trim()) docTitle = t[1].trim();
      body = body.slice(fm[0].length);
    }
  }

  const sections = splitSections(body, docType);
  if (sections.length > 0 && !sections.some((s) => s.hasBody)) {
    const headings = sections.map((s) => s.trail[s.trail.length - 1] ?? s.text.trim()).join('\n');
    return splitWithOverlap(headings, maxChars, overlap).map((content, index) => ({ index, title: fitTitle([docTitle]), content }));
  }
  const chunks: DocumentChunk[] = [];
  for (const section of sections) {
    if (!section.hasBody) continue;
    const title = fitTitle(section.trail.length > 0 ? section.trail : [docTitle]);
    for (const piece of splitWithOverlap(section.text.trim(), maxChars, overlap)) {
      const content = piece.trim();
      if (content) chunks.push({ index: chunks.length, title, content });
    }
  }
  return chunks;
}

/** `A › B › C`, dropping outer headings while longer than TITLE_MAX_CHARS, and cutting the last resort. */
function fitTitle(trail: string[]): string {
  const parts = trail.filter((t) => t !== '');
  if (parts.length === 0) return 'Untitled';
  while (parts.length > 1 && parts.join(' › ').length > TITLE_MAX_CHARS) parts.shift();
  const title = parts.join(' › ');
  return title.length > TITLE_MAX_CHARS ? `${title.slice(0, TITLE_MAX_CHARS - 1)}…` : title;
}

/** Pieces of at most `max` characters; every piece after the first starts with overlap from the one before. */
export function splitWithOverlap(text: string, max: number, overlap: number): string[] {
  if (text.length <= max) return [text];
  const pieces = split(text, max - overlap, 0);
  return pieces.map((piece, i) => (i === 0 ? piece : tail(pieces[i - 1], overlap) + piece));
}

/** Cuts `text` into pieces of at most `max` characters whose concatenation is `text`. */
function split(text: string, max: number, level: number): string[] {
  if (text.length <= max) return [text];
  if (level >= SEPARATORS.length) {
    const out: string[] = [];
    for (let i = 0; i < text.length; i += max) out.push(text.slice(i, i + max));
    return out;
  }
  const parts = splitKeepingSeparators(text, SEPARATORS[level]);
  if (parts.length === 1) return split(text, max, level + 1);
  const out: string[] = [];
  let current = '';
  for (const part of parts) {
    if (current.length + part.length <= max) {
      current += part;
      continue;
    }
    if (current) out.push(current);
    if (part.length <= max) {
      current = part;
    } else {
      const sub = split(part, max, level + 1);
      out.push(...sub.slice(0, -1));
      current = sub[sub.length - 1];
    }
  }
  if (current) out.push(current);
  return out;
}

/** Splits after each match of `separator`, so the parts join back into `text`. */
function splitKeepingSeparators(text: string, separator: RegExp): string[] {
  const parts: string[] = [];
  let last = 0;
  for (const m of text.matchAll(separator)) {
    const end = m.index + m[0].length;
    if (end > last && m.index > 0) {
      parts.push(text.slice(last, end));
      last = end;
    }
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

/** The last `overlap` characters of `text`, starting at a word (the first partial word dropped). */
function tail(text: string, overlap: number): string {
  if (overlap <= 0) return '';
  if (text.length <= overlap) return text;
  const cut = text.slice(text.length - overlap);
  const space = cut.search(/\s/);
  const fromWord = space >= 0 && /\S/.test(text[text.length - overlap - 1] ?? ' ') ? cut.slice(space) : cut;
  return fromWord.replace(/^\s+/, '');
}
