import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

/**
 * Recorded provider streams kept in the repository (test/fixtures/llm-streams; its README gives
 * the format, each file's source, commit and licence).
 */
export const RECORDINGS_DIR = path.join(__dirname, '../fixtures/llm-streams');

/** `sse`: OpenAI Chat Completions `data:` payloads; `ndjson`: Ollama /api/chat lines. */
export type RecordingFormat = 'sse' | 'ndjson';

/** One frame on the wire: an SSE message (`event` optional) / NDJSON line, or an SSE comment. */
export type WireFrame = { data: string; event?: string } | { comment: string };

export interface Recording {
  name: string;
  format: RecordingFormat;
  /** each line of the file, verbatim */
  lines: string[];
  /** each line parsed (`"[DONE]"` stays the string "[DONE]") */
  payloads: unknown[];
}

/** Names (without `.jsonl`) of every recording in the folder, sorted. */
export function listRecordings(): string[] {
  return readdirSync(RECORDINGS_DIR)
    .filter((f) => f.endsWith('.jsonl'))
    .map((f) => f.slice(0, -'.jsonl'.length))
    .sort();
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Loads a recording; its format is read from its content (Ollama lines carry `done`, never `choices`). */
export function loadRecording(name: string): Recording {
  const text = readFileSync(path.join(RECORDINGS_DIR, `${name}.jsonl`), 'utf8');
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const payloads = lines.map((l) => JSON.parse(l) as unknown);
  const ndjson = payloads.every((p) => isObject(p) && !('choices' in p) && ('done' in p || 'message' in p || 'error' in p));
  return { name, format: ndjson ? 'ndjson' : 'sse', lines, payloads };
}

/**
 * The frames the provider sent: `"[DONE]"` becomes `data: [DONE]`, and a final error object
 * with no `choices` (Groq) is sent as `event: error`, as the README's provenance notes record.
 */
export function recordingFrames(rec: Recording): WireFrame[] {
  return rec.lines.map((line, i) => {
    const payload = rec.payloads[i];
    if (rec.format === 'sse' && payload === '[DONE]') return { data: '[DONE]' };
    const isLast = i === rec.lines.length - 1;
    if (rec.format === 'sse' && isLast && isObject(payload) && 'error' in payload && !('choices' in payload)) {
      return { event: 'error', data: line };
    }
    return { data: line };
  });
}
