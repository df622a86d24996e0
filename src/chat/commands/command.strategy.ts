import { Injectable } from '@nestjs/common';
import { emptyUsage, type ProtocolEvent } from '../../orchestration/protocol-event';
import type { ProtocolExecutionContext, ProtocolStrategy } from '../../orchestration/protocol-strategy';
import type { ToolRunResult, ToolSource } from '../../tools/tool-definition';

/** A chat command: `/name args`. Its handler writes Markdown and may run one tool. */
interface CommandDef {
  name: string;
  usage: string;
  description: string;
  run(args: string, ctx: ProtocolExecutionContext): AsyncGenerator<ProtocolEvent, string, undefined>;
}

/** `/name rest-of-line`, name in letters, digits, `_` and `-`. */
const COMMAND = /^\/([A-Za-z][\w-]{0,31})(?:\s+([\s\S]*))?$/;

/** True when a message is a command (a leading `/name`), which never reaches the model. */
export function isCommand(content: string): boolean {
  return COMMAND.test(content.trim());
}

/**
 * The command registry as a protocol: `/help`, `/tools`, `/rag <query>`, `/search <query>`.
 * Commands go through the same run pipeline as model turns (user message stored, events
 * numbered and stored, one `done`, answer stored) but never call the model. An unknown
 * command answers with the list.
 */
@Injectable()
export class CommandStrategy implements ProtocolStrategy {
  readonly name = 'command';
  private readonly commands: CommandDef[] = [
    { name: 'help', usage: '/help', description: 'list the commands', run: (_a, _c) => this.help() },
    { name: 'tools', usage: '/tools', description: 'list the tools the model can call now', run: (_a, c) => this.tools(c) },
    { name: 'rag', usage: '/rag <query>', description: 'search the knowledge base (no model involved)', run: (a, c) => this.toolCommand('rag_query', a, c, (q) => ({ query: q })) },
    { name: 'search', usage: '/search <query>', description: 'search the web (no model involved)', run: (a, c) => this.toolCommand('web_search', a, c, (q) => ({ query: q })) },
  ];

  readonly capabilities = { pausePoints: false, resume: false, tools: false };

  async *execute(ctx: ProtocolExecutionContext): AsyncGenerator<ProtocolEvent, void, undefined> {
    const m = COMMAND.exec(String(ctx.messages.at(-1)?.content ?? '').trim());
    const name = m?.[1].toLowerCase() ?? '';
    const args = (m?.[2] ?? '').trim();
    const def = this.commands.find((c) => c.name === name);
    yield { type: 'phase', status: 'start', phase: 'action_phase', phaseIndex: 1, cycleIndex: 0 };
    ctx.trace.record({ requestId: ctx.requestId, projectId: ctx.projectId, type: 'command', details: { name, known: !!def } });
    const text = def ? yield* def.run(args, ctx) : `Unknown command \`/${name}\`.\n\n${this.list()}`;
    yield { type: 'chunk', content: text };
    yield { type: 'phase', status: 'end', phase: 'action_phase', phaseIndex: 1, cycleIndex: 0, reason: 'command' };
    yield { type: 'done', fullContent: '', stopReason: ctx.signal.aborted ? 'cancelled' : 'final_answer', usage: emptyUsage() };
  }

  private list(): string {
    return ['Commands:', ...this.commands.map((c) => `- \`${c.usage}\` — ${c.description}`)].join('\n');
  }

  // eslint-disable-next-line require-yield
  private async *help(): AsyncGenerator<ProtocolEvent, string, undefined> {
    return this.list();
  }

  // eslint-disable-next-line require-yield
  private async *tools(ctx: ProtocolExecutionContext): AsyncGenerator<ProtocolEvent, string, undefined> {
    const specs = await ctx.tools.specs();
    if (specs.length === 0) return 'No tool is available right now.';
    return ['Tools available now:', ...specs.map((s) => `- \`${s.name}\` — ${s.description.split('\n')[0]}`)].join('\n');
  }

  private async *toolCommand(
    tool: string,
    query: string,
    ctx: ProtocolExecutionContext,
    args: (q: string) => Record<string, unknown>,
  ): AsyncGenerator<ProtocolEvent, string, undefined> {
    if (!query) return `Usage: \`/${tool === 'rag_query' ? 'rag' : 'search'} <query>\``;
    const callId = `cmd_${ctx.requestId.slice(0, 8)}`;
    yield { type: 'tool_progress', tool, callId, action: 'calling', params: args(query), isError: false };
    const progress: Array<{ stage: string; message: string; metadata?: Record<string, unknown> }> = [];
    const r = await ctx.tools.run({ name: tool, arguments: args(query), callId }, { projectId: ctx.projectId, requestId: ctx.requestId, signal: ctx.signal, progress: (p) => progress.push(p) });
    for (const p of progress) yield { type: 'tool_phase', toolId: tool, ...p };
    const failed = r.outcome !== 'success' || r.isError;
    yield { type: 'tool_progress', tool, callId, action: failed ? 'failed' : 'completed', params: r.args, isError: failed, outcome: r.outcome, ...(ctx.debugShowToolResults ? { output: r.output } : {}) };
    if (failed) return `\`${tool}\` could not run (${r.outcome}): ${errorText(r)}`;
    yield sourcesEvent(r.sources, r.output);
    return formatSources(tool, query, r.sources);
  }
}

function errorText(r: ToolRunResult): string {
  const o = r.output as { message?: string } | null;
  return o && typeof o === 'object' && typeof o.message === 'string' ? o.message : r.outputText.slice(0, 300);
}

function sourcesEvent(sources: ToolSource[], output: unknown): ProtocolEvent {
  const rag = sources.filter((s) => s.type === 'rag');
  const web = sources.filter((s) => s.type === 'web');
  const o = (output ?? {}) as { confidence?: string; metrics?: Record<string, unknown> };
  return {
    type: 'sources',
    data: sources,
    sourceTypes: [...new Set(sources.map((s) => s.type))],
    ragCount: rag.length,
    webCount: web.length,
    confidence: rag.length ? (o.confidence ?? 'medium') : 'high',
    metrics: o.metrics ?? null,
  };
}

function formatSources(tool: string, query: string, sources: ToolSource[]): string {
  if (sources.length === 0) return `No results for “${query}”.`;
  const lines = sources.map((s, i) => {
    const where = s.url ?? s.path ?? '';
    const snippet = s.snippet ? ` — ${String(s.snippet).replace(/\s+/g, ' ').slice(0, 200)}` : '';
    return `${i + 1}. **${s.title || where}**${where && s.title ? ` (${where})` : ''}${snippet}`;
  });
  return [`Results of \`${tool}\` for “${query}”:`, ...lines].join('\n');
}
