import { BadRequestException, Body, Controller, Delete, Get, HttpCode, NotFoundException, Param, ParseUUIDPipe, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiCreatedResponse, ApiForbiddenResponse, ApiNoContentResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../common/auth/admin-only.decorator';
import { ApiKeyDto, CreateApiKeyDto, CreatedApiKeyDto } from './api-keys.dto';
import { ApiKeysService } from './api-keys.service';

@ApiTags('admin')
@AdminOnly()
@ApiForbiddenResponse({ description: 'the key is not an admin key for every project' })
@Controller('api/admin/keys')
export class ApiKeysController {
  constructor(private readonly keys: ApiKeysService) {}

  @Post()
  @ApiOperation({ operationId: 'createApiKey', summary: 'Create a key bound to projects; the key is shown only in this answer' })
  @ApiCreatedResponse({ type: CreatedApiKeyDto })
  @ApiBadRequestResponse({ description: "invalid body, expiresAt not an RFC 3339 date-time in the future, or '*' with other projects (nothing is stored)" })
  create(@Body() dto: CreateApiKeyDto): Promise<CreatedApiKeyDto> {
    // a key born expired would be handed out as if it worked
    if (dto.expiresAt !== undefined && !(Date.parse(dto.expiresAt) > Date.now())) throw new BadRequestException('expiresAt must be a date-time in the future');
    // '*' already means every project; beside others it would read as a short list
    if (dto.projects.includes('*') && dto.projects.length > 1) throw new BadRequestException("projects is either ['*'] or a list of projects, not both");
    return this.keys.store.create(dto);
  }

  @Get()
  @ApiOperation({ operationId: 'listApiKeys', summary: 'Every key, revoked ones included (never the key itself)' })
  @ApiOkResponse({ type: [ApiKeyDto] })
  list(): Promise<ApiKeyDto[]> {
    return this.keys.store.list();
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ operationId: 'revokeApiKey', summary: 'Revoke a key: it stops working at once, on every instance' })
  @ApiNoContentResponse({ description: 'revoked' })
  @ApiNotFoundResponse({ description: 'unknown or already revoked key' })
  async revoke(@Param('id', new ParseUUIDPipe()) id: string): Promise<void> {
    if (!(await this.keys.store.revoke(id))) throw new NotFoundException(`No live key ${id}`);
  }
}
