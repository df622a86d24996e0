import * as path from 'node:path';

/**
 * The document types the knowledge base indexes, by file extension (lower-cased).
 * Markdown (`.md`, `.markdown`, `.mdx`), plain text (`.txt`, `.text`), reStructuredText
 * (`.rst`) and AsciiDoc (`.adoc`, `.asciidoc`): formats people write documentation in, whose
 * headings can be found without a full parser. Everything else (source code, HTML, PDF,
 * images) is ignored: code has its own tools (read_file), and binary formats need extraction.
 */
export type DocType = 'md' | 'txt' | 'rst' | 'adoc';

export const DOC_TYPE_BY_EXTENSION: Readonly<Record<string, DocType>> = {
  '.md': 'md',
  '.markdown': 'md',
  '.mdx': 'md',
  '.txt': 'txt',
  '.text': 'txt',
  '.rst': 'rst',
  '.adoc': 'adoc',
  '.asciidoc': 'adoc',
};

/** The doc type of a file name, or null when the knowledge base does not index it. */
export function docTypeOf(fileName: string): DocType | null {
  return DOC_TYPE_BY_EXTENSION[path.extname(fileName).toLowerCase()] ?? null;
}
