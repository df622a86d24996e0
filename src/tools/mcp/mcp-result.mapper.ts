import { isDeepStrictEqual } from 'node:util';

/** One content block as Orion hands it to the model: text as is, binary data summarized, never inlined. */
export type McpOutputBlock =
  | { type: 'text'; text: string }
  | { type: 'image' | 'audio'; mimeType?: string; bytes: number; note: string }
  | { type: 'resource'; uri?: string; mimeType?: string; text?: string; bytes?: number; note?: string }
  | { type: 'resource_link'; uri?: string; name?: string; title?: string; description?: string; mimeType?: string }
  | { type: string; note: string };

/**
 * The JSON output of an MCP tool call (`ToolExecuteResult.output`).
 * - `content`: the result's blocks (omitted when empty and `structuredContent` is present);
 * - `structuredContent`: the tool's structured result, when it gave one. A text block that only repeats
 *   it (the JSON serialization the spec asks servers to add, or one of its top-level strings) is dropped;
 * - `truncated` / `originalBytes`: set when the whole exceeded the byte cap; `content` is then one text
 *   block holding the beginning of a text rendering of everything.
 */
export interface McpToolOutput {
  content?: McpOutputBlock[];
  structuredContent?: unknown;
  truncated?: true;
  originalBytes?: number;
}

/** The subset of CallToolResult this mapper reads (also the pre-2024-11 `toolResult` shape). */
export interface McpCallResultLike {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
  toolResult?: unknown;
}

export function toMcpToolOutput(result: McpCallResultLike, maxBytes: number): McpToolOutput {
  if (result.content === undefined && result.toolResult !== undefined) {
    return capOutput({ structuredContent: result.toolResult }, maxBytes);
  }
  const structured = result.structuredContent;
  const blocks = (Array.isArray(result.content) ? result.content : [])
    .map(toBlock)
    .filter((b) => !(structured !== undefined && b.type === 'text' && repeats((b as { text: string }).text, structured)));
  const output: McpToolOutput = {};
  if (blocks.length > 0 || structured === undefined) output.content = blocks;
  if (structured !== undefined) output.structuredContent = structured;
  return capOutput(output, maxBytes);
}

function toBlock(raw: unknown): McpOutputBlock {
  const b = (raw ?? {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  switch (b.type) {
    case 'text':
      return { type: 'text', text: str(b.text) ?? '' };
    case 'image':
    case 'audio':
      return {
        type: b.type,
        mimeType: str(b.mimeType),
        bytes: base64Bytes(str(b.data)),
        note: `${b.type} data omitted`,
      };
    case 'resource': {
      const r = (b.resource ?? {}) as Record<string, unknown>;
      if (typeof r.text === 'string') return { type: 'resource', uri: str(r.uri), mimeType: str(r.mimeType), text: r.text };
      return {
        type: 'resource',
        uri: str(r.uri),
        mimeType: str(r.mimeType),
        bytes: base64Bytes(str(r.blob)),
        note: 'binary content omitted',
      };
    }
    case 'resource_link':
      return {
        type: 'resource_link',
        uri: str(b.uri),
        name: str(b.name),
        title: str(b.title),
        description: str(b.description),
        mimeType: str(b.mimeType),
      };
    default:
      return { type: String(b.type ?? 'unknown'), note: 'content type not supported by Orion; omitted' };
  }
}

/** Whether a text block only restates the structured content. */
function repeats(text: string, structured: unknown): boolean {
  try {
    if (isDeepStrictEqual(JSON.parse(text), structured)) return true;
  } catch {
    // not JSON
  }
  return (
    typeof structured === 'object' &&
    structured !== null &&
    Object.values(structured as Record<string, unknown>).some((v) => v === text)
  );
}

function base64Bytes(data: string | undefined): number {
  if (!data) return 0;
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

/**
 * Keeps the output's JSON within maxBytes (UTF-8). An output that fits is returned as is; otherwise
 * everything is rendered as text, cut at a character boundary, and marked `truncated`.
 */
export function capOutput(output: McpToolOutput, maxBytes: number): McpToolOutput {
  const json = JSON.stringify(output);
  const originalBytes = Buffer.byteLength(json);
  if (originalBytes <= maxBytes) return output;

  const rendered = [
    ...(output.content ?? []).map((b) => (b.type === 'text' ? (b as { text: string }).text : JSON.stringify(b))),
    ...(output.structuredContent !== undefined ? [JSON.stringify(output.structuredContent)] : []),
  ].join('\n');
  const build = (text: string): McpToolOutput => ({
    content: [{ type: 'text', text }],
    truncated: true,
    originalBytes,
  });
  // JSON escaping can make the text longer than its raw bytes: shrink until the whole fits.
  let budget = maxBytes - Buffer.byteLength(JSON.stringify(build(''))) - 1;
  for (let i = 0; i < 8 && budget > 0; i++) {
    const candidate = build(cutUtf8(rendered, budget) + '…');
    const size = Buffer.byteLength(JSON.stringify(candidate));
    if (size <= maxBytes) return candidate;
    budget = Math.floor((budget * maxBytes) / size) - 8;
  }
  return build('');
}

function cutUtf8(s: string, maxBytes: number): string {
  const buf = Buffer.from(s, 'utf8');
  if (buf.length <= maxBytes) return s;
  return buf.subarray(0, maxBytes).toString('utf8').replace(/\uFFFD+$/, '');
}
