import type { ReplayTranscript } from './replay-transcript';

/**
 * First step of an agentic turn: when tools are offered and nothing has been run yet, look at
 * the project (`list_files` on "."), exactly as a real model tends to. Only if `list_files` is
 * offered; with any other tool set the replay answers directly.
 */
export const listFilesFirstTranscript: ReplayTranscript = {
  name: 'list-files-first',
  matches: (ctx) => ctx.toolResult === undefined && ctx.callableTools.includes('list_files'),
  reply: () => ({ toolCalls: [{ name: 'list_files', arguments: { path: '.' } }] }),
};
