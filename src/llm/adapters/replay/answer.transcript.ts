import type { ReplayTranscript } from './replay-transcript';

/** How much of the question and of the tool output the answer quotes (keeps replies short). */
const QUESTION_QUOTE_CHARS = 300;
const TOOL_OUTPUT_QUOTE_CHARS = 200;

function excerpt(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

/**
 * The final answer: says plainly that it is a replay, quotes the question, and when a tool ran,
 * shows that its output reached the model (the start of it). Matches everything, so it is last.
 */
export const answerTranscript: ReplayTranscript = {
  name: 'answer',
  matches: () => true,
  reply: (ctx) => {
    const parts = [
      '[replay] This is a recorded demo reply, not a real model.',
      ctx.question ? `You asked: "${excerpt(ctx.question, QUESTION_QUOTE_CHARS)}".` : 'There was no question to answer.',
    ];
    if (ctx.toolResult !== undefined) {
      parts.push(`I received tool output: "${excerpt(ctx.toolResult, TOOL_OUTPUT_QUOTE_CHARS)}".`);
    }
    parts.push('Set LLM_BASE_URL and LLM_MODEL to talk to a real model.');
    return { text: parts.join(' ') };
  },
};
