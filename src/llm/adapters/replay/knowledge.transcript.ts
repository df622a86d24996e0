import type { ReplayTranscript } from './replay-transcript';
import { errorMessageOf, excerpt, lastResultOf, resultObject, wantsKnowledge } from './replay-text.util';

/** Sources the answer cites, and how much of each it quotes. */
const CITED_SOURCES = 3;
const SNIPPET_CHARS = 160;
/** Longest query the replay model sends (the question, cut). */
const QUERY_CHARS = 500;

const DEMO = '[replay] This is a recorded demo reply, not a real model.';

/**
 * A rag turn (issue #5, item 9): when `rag_query` is offered and the question asks the
 * knowledge base (it says rag, docs, documentation, knowledge, manual, guide, wiki or
 * "according to"), the replay model calls `rag_query` with the question, then answers from
 * the result, citing up to three sources by path with a snippet. Plain questions ("What is
 * Orion?") are left to the direct answer.
 */
export const knowledgeTranscript: ReplayTranscript = {
  name: 'knowledge',
  matches: (ctx) =>
    lastResultOf(ctx, 'rag_query') !== undefined ||
    (wantsKnowledge(ctx.question) && ctx.callableTools.includes('rag_query') && ctx.toolResults.length === 0),
  reply: (ctx) => {
    const rag = lastResultOf(ctx, 'rag_query');
    if (!rag) return { toolCalls: [{ name: 'rag_query', arguments: { query: ctx.question.trim().slice(0, QUERY_CHARS) } }] };
    if (rag.isError) return { text: `${DEMO} I searched the knowledge base, but the search failed: ${errorMessageOf(rag)}` };
    const o = resultObject(rag);
    // rag_query returns `results`; tolerate `sources` (other retrieval tools, MCP)
    const list = Array.isArray(o?.results) ? o.results : Array.isArray(o?.sources) ? o.sources : [];
    const sources = (list as Array<Record<string, unknown>>).filter((x) => x && typeof x === 'object');
    if (sources.length === 0) {
      return { text: `${DEMO} I searched the knowledge base for "${excerpt(ctx.question, 120)}" and found nothing relevant${o ? '' : `: "${excerpt(rag.content, 200)}"`}.` };
    }
    const cited = sources.slice(0, CITED_SOURCES).map((x, i) => {
      const where = String(x.path ?? x.url ?? x.title ?? `source ${i + 1}`);
      const said = String(x.snippet ?? x.content ?? '');
      return `[${i + 1}] ${where}${said ? ` — "${excerpt(said, SNIPPET_CHARS)}"` : ''}`;
    });
    const confidence = typeof o?.confidence === 'string' ? `, confidence ${o.confidence}` : '';
    return { text: `${DEMO} From the knowledge base (${sources.length} source${sources.length === 1 ? '' : 's'}${confidence}): ${cited.join(' ')}` };
  },
};
