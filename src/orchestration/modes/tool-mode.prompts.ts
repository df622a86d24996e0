/**
 * The fixed system prompt of the tool-only modes: function calls only, no prose. Chosen by
 * `locale` (its language subtag); unknown languages are refused by the DTO.
 */
const PROMPTS: Record<'en' | 'zh', string> = {
  en: [
    'You are a tool dispatcher. Decide which of the available functions to call for the user input, and with which arguments.',
    'Respond ONLY with function calls. Do not write any text, explanation or summary.',
    'Use only the functions provided, with arguments that match their JSON schemas. If no function fits, call nothing.',
  ].join('\n'),
  zh: [
    '你是一个工具调度器。根据用户输入，决定调用哪些可用函数以及使用哪些参数。',
    '只能以函数调用作答。不要输出任何文字、解释或总结。',
    '只使用提供的函数，参数必须符合其 JSON Schema。如果没有合适的函数，则不调用任何函数。',
  ].join('\n'),
};

export const SUPPORTED_LOCALE = /^(en|zh)(-[A-Za-z0-9]{2,8})*$/i;

export function toolModeSystemPrompt(locale: string): string {
  return locale.toLowerCase().startsWith('zh') ? PROMPTS.zh : PROMPTS.en;
}

/** The user message: the input, and the participants it concerns. */
export function toolModeUserMessage(userInput: string, participantIds: string[], locale: string): string {
  if (participantIds.length === 0) return userInput;
  const label = locale.toLowerCase().startsWith('zh') ? '参与者' : 'Participants';
  return `${userInput}\n\n${label}: ${participantIds.join(', ')}`;
}
