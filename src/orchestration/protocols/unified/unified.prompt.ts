import type { KnowledgeModuleInfo, RetrievalResult } from '../../../knowledge/knowledge-retriever.port';
import type { LlmToolSpec } from '../../../llm/llm-adapter.port';
import { CHARS_PER_TOKEN } from '../../context-budget';
import { UNIFIED_SYSTEM_PROMPT } from '../prompts';

/**
 * The unified route's system prompts (issue #5, item 2). Each is built once per turn from
 * parts that are never cut — the role ({@link UNIFIED_SYSTEM_PROMPT}), the tool guidance and
 * the conversation's custom instructions — and parts that are trimmed to the system share of
 * the context window: the list of knowledge modules (agentic path) or the retrieved excerpts
 * (direct path). When the fixed parts alone exceed the share they are still sent whole: the
 * issue says the system prompt is never cut, so only the optional lists shrink.
 */

/** What each built-in tool is for, in the words the model reads. Unknown (MCP) tools use their description. */
const TOOL_HINTS: Readonly<Record<string, string>> = {
  rag_query:
    "searches the project's knowledge base (the indexed documents listed below). Use it for questions about the project, its documents, decisions, procedures or anything those modules cover; cite the paths of the sources you use.",
  web_search: 'searches the web. Use it for current events or facts outside the project; then read the most promising results with fetch_page or fetch_pages_batch.',
  fetch_page: 'fetches one web page (http/https) as readable text.',
  fetch_pages_batch: 'fetches up to 8 web pages in parallel; prefer it to several fetch_page calls.',
  list_files: "lists the files of the user's project folder.",
  read_file: "reads one text file of the user's project folder (paths as list_files shows them).",
};

/** How much of an MCP tool's description the guidance quotes. */
const OTHER_TOOL_DESCRIPTION_CHARS = 160;
/** Longest excerpt of one retrieved source quoted in the direct path's prompt. */
const EXCERPT_MAX_CHARS = 2_000;
/** An excerpt cut shorter than this is dropped instead (too little to be useful). */
const EXCERPT_MIN_CHARS = 200;

export interface AgentPromptInput {
  /** the tools offered in this turn */
  tools: LlmToolSpec[];
  /** the project's knowledge modules (listed only when rag_query is offered) */
  modules: KnowledgeModuleInfo[];
  /** the conversation's custom instructions (`ctx.systemContext`) */
  customInstructions?: string;
  /** the system share of the context window, in tokens */
  maxTokens: number;
}

/** The agentic path's system prompt: role, tool guidance, knowledge modules, custom instructions. */
export function buildAgentSystemPrompt(input: AgentPromptInput): string {
  const names = input.tools.map((t) => t.name);
  const guidance = [
    `Tools available in this turn: ${names.join(', ')}.`,
    'Decide first whether you need a tool at all: answer greetings, general knowledge and questions about this conversation directly.',
    ...input.tools.map((t) => `- ${t.name}: ${TOOL_HINTS[t.name] ?? oneLine(t.description, OTHER_TOOL_DESCRIPTION_CHARS)}`),
    'Independent calls may go in one response: they run in parallel. Each result comes back as a tool message for its call.',
    'A result marked "is_error" means the call failed: correct the arguments and call again, try another tool, or tell the user what went wrong.',
    'Never repeat a call with the same arguments: its result is already in this conversation.',
    'When you have what you need, answer the user without calling tools, using every tool result above.',
  ].join('\n');
  const fixed = [UNIFIED_SYSTEM_PROMPT, guidance];
  const instructions = instructionsSection(input.customInstructions);
  const fixedText = joinSections([...fixed, instructions]);
  const modules =
    names.includes('rag_query') && input.modules.length > 0
      ? modulesSection(input.modules, input.maxTokens * CHARS_PER_TOKEN - fixedText.length - 2)
      : '';
  return joinSections([...fixed, modules, instructions]);
}

export interface DirectPromptInput {
  /** what the knowledge base returned for the user's prompt (undefined: no knowledge base, or it failed) */
  retrieval?: RetrievalResult;
  customInstructions?: string;
  maxTokens: number;
}

/** The direct path's system prompt: role, numbered excerpts with their paths (when any), custom instructions. */
export function buildDirectSystemPrompt(input: DirectPromptInput): string {
  const instructions = instructionsSection(input.customInstructions);
  const sources = input.retrieval?.sources ?? [];
  if (sources.length === 0) return joinSections([UNIFIED_SYSTEM_PROMPT, instructions]);
  const header = [
    "Excerpts from the project's knowledge base that may answer the user, best first.",
    'Answer from them when they are relevant and cite them by number and path, like [1] docs/guide.md. If they do not contain the answer, say so and answer from what you know.',
  ].join('\n');
  let room = input.maxTokens * CHARS_PER_TOKEN - joinSections([UNIFIED_SYSTEM_PROMPT, header, instructions]).length - 2;
  const excerpts: string[] = [];
  for (const [i, s] of sources.entries()) {
    const head = `[${i + 1}] ${s.path}${s.module ? ` (module ${s.module})` : ''}${s.title && s.title !== s.path ? ` — ${s.title}` : ''}\n`;
    const body = (s.content || s.snippet || '').trim();
    const fits = Math.min(body.length, EXCERPT_MAX_CHARS, room - head.length - 2);
    if (fits < Math.min(body.length, EXCERPT_MIN_CHARS)) break; // lower-ranked excerpts go first
    const text = head + (fits < body.length ? `${body.slice(0, fits)}…` : body);
    excerpts.push(text);
    room -= text.length + 2;
  }
  if (excerpts.length === 0) return joinSections([UNIFIED_SYSTEM_PROMPT, instructions]);
  return joinSections([UNIFIED_SYSTEM_PROMPT, `${header}\n\n${excerpts.join('\n\n')}`, instructions]);
}

/** The module list, cut to `maxChars` (whole lines; the rest counted in a last line). */
function modulesSection(modules: KnowledgeModuleInfo[], maxChars: number): string {
  const header = 'Knowledge base modules of this project (search them with rag_query):';
  const lines = modules.map((m) => `- ${m.name}${m.displayName && m.displayName !== m.name ? ` — ${m.displayName}` : ''} (${m.docType || 'documents'})`);
  const kept: string[] = [];
  let used = header.length;
  for (const [i, line] of lines.entries()) {
    const rest = lines.length - i - 1;
    const tail = rest > 0 ? `\n- … and ${rest} more modules`.length : 0;
    if (used + 1 + line.length + tail > maxChars) break;
    kept.push(line);
    used += 1 + line.length;
  }
  if (kept.length === 0 && header.length + 40 > maxChars) return '';
  if (kept.length < lines.length) kept.push(`- … and ${lines.length - kept.length} more modules`);
  return [header, ...kept].join('\n');
}

function instructionsSection(custom: string | undefined): string {
  const text = custom?.trim();
  return text ? `Instructions for this conversation (follow them):\n${text}` : '';
}

function joinSections(parts: string[]): string {
  return parts.filter((p) => p.length > 0).join('\n\n');
}

function oneLine(text: string, max: number): string {
  const flat = (text ?? '').replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat || 'no description';
}
