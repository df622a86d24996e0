import { BadRequestException, Body, Controller, Delete, Get, HttpCode, NotFoundException, Param, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConflictResponse, ApiCreatedResponse, ApiForbiddenResponse, ApiNoContentResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../common/auth/admin-only.decorator';
import { ApiKeyDto, CreateApiKeyDto, CreatedApiKeyDto } from './api-keys.dto';
import { ApiKeysService } from './api-keys.service';
import { AdminException, AdminExceptionCode } from './admin.exception';
import { UuidParamPipe } from '../common/errors/field-errors';

/** What the first key must be, and why (the 409's message and the route's description). */
export const FIRST_KEY_RULE =
  "The first key turns keys on for good: from then on every route needs a key, and only an admin key for every project can create keys. So the first key must be {\"projects\": [\"*\"], \"role\": \"admin\"} without expiresAt; create it, give it to Authorize (or send Authorization: Bearer <key>), then create user keys with it";

/** Why the last admin key is not revoked (the 409's message). */
export const lastAdminKeyMessage = (id: string) =>
  `Key ${id} is the last active admin key for every project and API_KEYS is not set: revoking it would leave every route answering 401. ` +
  "Create another admin key first (POST /api/admin/keys {\"name\": …, \"projects\": [\"*\"], \"role\": \"admin\"}), then revoke this one; or use `npm run keys -- revoke <id>` from a shell on the service's database. Nothing was changed";

@ApiTags('admin')
@AdminOnly()
@ApiForbiddenResponse({ description: 'the key is not an admin key for every project' })
@Controller('api/admin/keys')
export class ApiKeysController {
  constructor(private readonly keys: ApiKeysService) {}

  @Post()
  @ApiOperation({
    operationId: 'createApiKey',
    summary: 'Create a key bound to projects; the key is shown only in this answer',
    description:
      'On a service with no key yet (no API_KEYS, no database key: local mode) the first key must be an admin key for every project without expiry ' +
      '(`{"projects": ["*"], "role": "admin"}`, as in the example); any other first key is a 409 `first_key_not_admin` and nothing is stored. ' +
      'From that answer on every route needs a key: give the `key` of the answer to Authorize, then create user keys with it.',
  })
  @ApiCreatedResponse({ type: CreatedApiKeyDto })
  @ApiBadRequestResponse({ description: "invalid body, expiresAt not an RFC 3339 date-time in the future, or '*' with other projects (nothing is stored)" })
  @ApiConflictResponse({ description: 'first_key_not_admin: no key exists yet and this one is not an admin key for every project without expiry (nothing is stored)' })
  async create(@Body() dto: CreateApiKeyDto): Promise<CreatedApiKeyDto> {
    // a key born expired would be handed out as if it worked
    if (dto.expiresAt !== undefined && !(Date.parse(dto.expiresAt) > Date.now())) throw new BadRequestException('expiresAt must be a date-time in the future');
    // '*' already means every project; beside others it would read as a short list
    if (dto.projects.includes('*') && dto.projects.length > 1) throw new BadRequestException("projects is either ['*'] or a list of projects, not both");
    // issue #42: a first key that cannot manage keys (or that expires) would lock its creator
    // out, with a way back only from a shell on the service's database
    const firstKeyOk = dto.role === 'admin' && dto.projects.length === 1 && dto.projects[0] === '*' && dto.expiresAt === undefined;
    if (!firstKeyOk && (await this.keys.authStatus()).status === 'local') throw new AdminException(AdminExceptionCode.FIRST_KEY_NOT_ADMIN, FIRST_KEY_RULE);
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
  @ApiConflictResponse({ description: 'last_admin_key: API_KEYS is not set and this is the last active admin key for every project; revoking it would lock everyone out (nothing changes)' })
  async revoke(@Param('id', new UuidParamPipe()) id: string): Promise<void> {
    // issue #42: with no API_KEYS, the last admin key for every project is the only way back in
    // short of a shell on the database; with API_KEYS set, those keys remain
    if (this.keys.hasEnvKeys()) {
      if (!(await this.keys.store.revoke(id))) throw new NotFoundException(`No live key ${id}`);
      return;
    }
    const outcome = await this.keys.store.revokeKeepingAnAdmin(id);
    if (outcome === 'not_found') throw new NotFoundException(`No live key ${id}`);
    if (outcome === 'last_admin') throw new AdminException(AdminExceptionCode.LAST_ADMIN_KEY, lastAdminKeyMessage(id));
  }
}
