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

/**
 * A tool that counts its executions at the tool itself: each call appends `name:step` to
 * `calls`, whichever instance runs it (instances in one test process can share the array).
 */
export function probeTool(name: string, calls: string[]): ToolDefinition {
  return {
    name,
    description: 'Looks something up',
    parameters: { type: 'object', properties: { step: { type: 'string' } }, required: ['step'] },
    origin: 'builtin',
    isAvailable: () => true,
    execute: async (args: Record<string, unknown>): Promise<ToolExecuteResult> => {
      calls.push(`${name}:${String(args.step)}`);
      return { output: { found: `${name} result for ${String(args.step)}` } };
    },
  };
}

/**
 * `probe_gate`, a tool that holds its turn mid-step until the test opens the gate: `gate.arm()`
 * before a turn, `await gate.reached` to know the tool runs, `gate.open()` to let it finish.
 */
export function gatedTool() {
  let open: () => void = () => undefined;
  let reached: () => void = () => undefined;
  const gate = {
    reached: Promise.resolve(),
    arm() {
      gate.reached = new Promise<void>((r) => (reached = r));
    },
    open: () => open(),
  };
  const tool: ToolDefinition = {
    name: 'probe_gate',
    description: 'Waits for something',
    parameters: { type: 'object', properties: { step: { type: 'string' } }, required: ['step'] },
    origin: 'builtin',
    isAvailable: () => true,
    execute: async (): Promise<ToolExecuteResult> => {
      const opened = new Promise<void>((r) => (open = r));
      reached();
      await opened;
      return { output: { found: 'gate result' } };
    },
  };
  return { gate, tool };
}
