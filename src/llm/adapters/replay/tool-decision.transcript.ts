import type { ReplayContext, ReplayReply, ReplayTranscript } from './replay-transcript';

/** Longest query the replay model sends (the request, cut). */
const QUERY_CHARS = 500;
/** At most this many pages in one fetch_pages_batch call (its schema's limit). */
const BATCH_URLS = 8;

const URL_PATTERN = /\bhttps?:\/\/[^\s"'<>)]+/gi;
/** A path the request names: `dir/file`, `file.ext`, or "the readme". */
const PATH_PATTERN = /(?:[\w-]+\/)+[\w.-]+|\b[\w-]+\.(?:md|markdown|mdx|txt|text|rst|adoc|json|ya?ml|toml|csv|ts|js|py)\b/i;
const README = /\breadme\b/i;

interface Intent {
  tool: string;
  /** the call's arguments when the request asks for this tool, else undefined */
  args(request: string, ctx: ReplayContext): Record<string, unknown> | undefined;
}

/**
 * What the request names, most specific first: a tool by its exact name, one or more URLs,
 * reading a named file, listing files, the knowledge base, a web search. Each intent needs its
 * tool offered; the first that fits decides.
 */
const INTENTS: readonly Intent[] = [
  { tool: 'fetch_pages_batch', args: (q) => (urlsIn(q).length > 1 ? { urls: urlsIn(q).slice(0, BATCH_URLS) } : undefined) },
  { tool: 'fetch_page', args: (q) => (urlsIn(q).length > 0 ? { url: urlsIn(q)[0] } : undefined) },
  { tool: 'read_file', args: (q) => (/\b(read|open|show|view|cat|print|contents?)\b/i.test(q) && pathIn(q) ? { path: pathIn(q) } : undefined) },
  { tool: 'list_files', args: (q) => (/\b(list|ls|files?|folders?|director(?:y|ies)|tree)\b/i.test(q) ? { path: '.' } : undefined) },
  { tool: 'rag_query', args: (q) => (/\b(rag|knowledge(?:[- ]base)?|docs?|documentation|manuals?|guides?|wiki)\b/i.test(q) ? { query: queryOf(q) } : undefined) },
  { tool: 'web_search', args: (q) => (/\b(web|internet|online|google|search)\b/i.test(q) ? { query: queryOf(q) } : undefined) },
];

/**
 * The tool-only modes' one decision (a non-streaming `complete` call over the exposed tools,
 * `/api/orchestration/execute`): the replay model calls the tool the request names — a tool's
 * exact name, `read` + a path → `read_file`, list/files/folder → `list_files`, knowledge/docs
 * → `rag_query`, search/web → `web_search`, a URL → `fetch_page` — if that tool is exposed.
 * A request that names none is left to the other transcripts (no call: `no_tool_calls`).
 * Chat turns stream and never reach this transcript.
 */
export const toolDecisionTranscript: ReplayTranscript = {
  name: 'tool-decision',
  matches: (ctx) => ctx.decision === true && ctx.toolResults.length === 0 && decide(ctx) !== undefined,
  reply: (ctx) => decide(ctx) ?? {},
};

function decide(ctx: ReplayContext): ReplayReply | undefined {
  const request = ctx.question;
  // a tool named exactly wins (MCP tools included); the replay model cannot guess its arguments
  const named = ctx.callableTools.find((name) => new RegExp(`\\b${escapeRegExp(name)}\\b`).test(request));
  if (named) return { toolCalls: [{ name: named, arguments: INTENTS.find((i) => i.tool === named)?.args(request, ctx) ?? {} }] };
  for (const intent of INTENTS) {
    if (!ctx.callableTools.includes(intent.tool)) continue;
    const args = intent.args(request, ctx);
    if (args) return { toolCalls: [{ name: intent.tool, arguments: args }] };
  }
  return undefined;
}

function urlsIn(text: string): string[] {
  return [...new Set(text.match(URL_PATTERN) ?? [])];
}

function pathIn(text: string): string | undefined {
  const withoutUrls = text.replace(URL_PATTERN, ' ');
  return PATH_PATTERN.exec(withoutUrls)?.[0] ?? (README.test(withoutUrls) ? 'README.md' : undefined);
}

/** The request without the participants line the tool-only prompt appends. */
function queryOf(text: string): string {
  return text.split(/\n\n(?:Participants|参与者):/)[0].trim().slice(0, QUERY_CHARS);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
