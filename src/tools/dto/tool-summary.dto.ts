import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { ToolSummary } from '../tool-registry.service';

/** One tool as `GET /api/tools` lists it (docs/API.md "Tools, trace, config, health"). */
export class ToolSummaryDto {
  @ApiProperty({ example: 'read_file' })
  name: string;

  @ApiProperty({ example: 'Read a text file of the current project.' })
  description: string;

  @ApiProperty({
    description: 'JSON Schema of the arguments, as the model sees it',
    type: 'object',
    additionalProperties: true,
    example: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  })
  parameters: Record<string, unknown>;

  @ApiProperty({ description: '"builtin" or "mcp:<server>"', example: 'builtin' })
  origin: string;

  @ApiProperty({ description: 'whether the tool can run now (e.g. web_search needs SEARXNG_URL)' })
  available: boolean;

  @ApiPropertyOptional({
    description: 'why the tool cannot run, when known: `definition changed` or `awaiting approval` (a held MCP tool), `server failed`…',
    example: 'definition changed',
  })
  unavailable?: string;
}

export function mapToolSummary(s: ToolSummary): ToolSummaryDto {
  return { name: s.name, description: s.description, parameters: s.parameters, origin: s.origin, available: s.available, ...(s.unavailable ? { unavailable: s.unavailable } : {}) };
}
