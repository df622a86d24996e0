import { codedException } from '../common/errors/orion.exception';

export enum ToolsExceptionCode {
  INVALID_TOOL_NAME = 'invalid_tool_name',
  NAME_TAKEN = 'tool_name_taken',
  UNKNOWN_TOOL = 'unknown_tool',
  INVALID_MCP_CONFIG = 'invalid_mcp_config',
}

const TOOLS_STATUS: Record<ToolsExceptionCode, number> = {
  [ToolsExceptionCode.UNKNOWN_TOOL]: 404,
  [ToolsExceptionCode.INVALID_TOOL_NAME]: 400,
  [ToolsExceptionCode.NAME_TAKEN]: 400,
  [ToolsExceptionCode.INVALID_MCP_CONFIG]: 400,
};

export class ToolsException extends codedException(TOOLS_STATUS) {}
