import type { ToolDefinition, ToolExecuteResult } from '../../src/tools/tool-definition';

/** A registered tool whose service is down: every call throws `message` (a real failure, not a stub result). */
export function failingTool(name: string, message: string): ToolDefinition {
  return {
    name,
    description: `Asks the ${name.replace(/_/g, ' ')}`,
    parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
    origin: 'builtin',
    isAvailable: () => true,
    execute: async (): Promise<ToolExecuteResult> => {
      throw new Error(message);
    },
  };
}
