import { OrionException } from '../common/errors/orion.exception';

export enum ToolsExceptionCode {
  INVALID_TOOL_NAME = 'invalid_tool_name',
  NAME_TAKEN = 'tool_name_taken',
  UNKNOWN_TOOL = 'unknown_tool',
  INVALID_MCP_CONFIG = 'invalid_mcp_config',
}

export class ToolsException extends OrionException<ToolsExceptionCode> {
  httpStatus(): number {
    switch (this.code) {
      case ToolsExceptionCode.UNKNOWN_TOOL:
        return 404;
      case ToolsExceptionCode.INVALID_TOOL_NAME:
      case ToolsExceptionCode.NAME_TAKEN:
      case ToolsExceptionCode.INVALID_MCP_CONFIG:
        return 400;
    }
  }
}
