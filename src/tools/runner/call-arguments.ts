import type { ArgsValidation, JsonSchemaValidator } from '../json-schema.validator';
import type { ToolDefinition } from '../tool-definition';
import { parseToolArguments, toolSignature, type ParsedArguments } from '../tool-signature.util';

/** A call's arguments as read: parsed, then validated against the tool's schema when both exist. */
export interface ReadArguments {
  parsed: ParsedArguments;
  /** undefined when the arguments did not parse or the tool is unknown */
  validation?: ArgsValidation;
}

/** Parses and validates; validating first also applies the defaults the canonical signature needs. */
export function readArguments(raw: unknown, def: ToolDefinition | undefined, validator: JsonSchemaValidator, key: string): ReadArguments {
  const parsed = parseToolArguments(raw);
  const validation = parsed.ok && def ? validator.validate(def.parameters, parsed.value, key) : undefined;
  return { parsed, validation };
}

/** The canonical signature, or null when it cannot be made (never throws). */
export function safeSignature(name: string, action: string | undefined, args: Record<string, unknown>, projectId: string): string | null {
  try {
    return toolSignature({ name, action, args, projectId: typeof projectId === 'string' ? projectId : '' });
  } catch {
    return null;
  }
}

/** The tool gets its own copy: whatever it does to it, `args` in the result stays what was validated. */
export function argumentsForTool(validated: Record<string, unknown>): Record<string, unknown> {
  return structuredClone(validated);
}
