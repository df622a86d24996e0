import type { ReplayContext, ReplayToolResult } from './replay-transcript';

/**
 * Small, deterministic readings of a request for the bundled transcripts: what the user seems
 * to want, and what earlier tool results said. Pattern matching, not understanding — enough
 * for a demo that shows each route's moves, and predictable enough to test.
 */

/** Words and shapes that ask about the project's files: a path, a file name, or "files/folder/list/readme…". */
const FILE_INTENT = /\b(files?|folders?|director(?:y|ies)|workspace|readme|list)\b|[\w-]+\/[\w./-]+|\b[\w-]+\.(?:md|markdown|txt|rst|json|ya?ml)\b/i;
/** Words that ask the knowledge base: "rag", "docs", "documentation", "knowledge (base)", "manual", "guide", "wiki", "according to". */
const KNOWLEDGE_INTENT = /\b(rag|docs?|documentation|knowledge(?:[- ]base)?|manuals?|guides?|handbook|wiki|according to)\b/i;
/** Files the chained transcript reads: Markdown and plain text. */
const TEXT_FILE = /\.(?:md|markdown|txt|rst)$/i;

export function wantsProjectFiles(question: string): boolean {
  return FILE_INTENT.test(question);
}

export function wantsKnowledge(question: string): boolean {
  return KNOWLEDGE_INTENT.test(question);
}

/** The latest result of `tool` in the conversation. */
export function lastResultOf(ctx: ReplayContext, tool: string): ReplayToolResult | undefined {
  return [...ctx.toolResults].reverse().find((r) => r.tool === tool);
}

/** A result's JSON object: the tool output itself, or the `result` inside an error or duplicate envelope. */
export function resultObject(r: ReplayToolResult): Record<string, unknown> | undefined {
  const parsed = parseObject(r.content);
  if (parsed && ('is_error' in parsed || 'duplicate_of' in parsed) && 'result' in parsed) return parseObjectValue(parsed.result);
  return parsed;
}

/** What a failed call said, for the answer. */
export function errorMessageOf(r: ReplayToolResult): string {
  const o = resultObject(r);
  return typeof o?.message === 'string' ? o.message : excerpt(r.content, 200);
}

/** Text files in a list_files result, in listing order (falls back to paths found in the text). */
export function textFilesIn(r: ReplayToolResult): string[] {
  const o = resultObject(r);
  const entries = Array.isArray(o?.entries) ? (o.entries as unknown[]) : [];
  const fromJson = entries
    .filter((e): e is { path: string; type?: string } => !!e && typeof (e as { path?: unknown }).path === 'string')
    .filter((e) => (e.type ?? 'file') === 'file' && TEXT_FILE.test(e.path))
    .map((e) => e.path);
  if (fromJson.length > 0 || entries.length > 0) return fromJson;
  return [...new Set(r.content.match(/[\w./-]+\.(?:md|markdown|txt|rst)\b/gi) ?? [])];
}

/** The file to read: one the question names, else the first listed. */
export function pickFile(question: string, files: string[]): string | undefined {
  const q = question.toLowerCase();
  return files.find((f) => q.includes(f.toLowerCase())) ?? files.find((f) => q.includes(f.split('/').pop()!.toLowerCase())) ?? files[0];
}

export function excerpt(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    return parseObjectValue(JSON.parse(text));
  } catch {
    return undefined;
  }
}

function parseObjectValue(v: unknown): Record<string, unknown> | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}
