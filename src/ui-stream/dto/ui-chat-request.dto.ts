import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsObject, IsOptional, IsString, Matches, MaxLength, ValidateNested } from 'class-validator';
import { SendMessageOptionsDto } from '../../chat/dto/send-message.dto';
import { PROJECT_ID_MESSAGE, PROJECT_ID_PATTERN } from '../../common/workspace/project-id';

/** A chat id: what the AI SDK's `Chat` generates, or any id the client keeps (no `/`, it is a path segment on resume). */
export const CHAT_ID_PATTERN = /^[^/\\\u0000-\u001f]{1,200}$/;
const CHAT_ID_MESSAGE = 'id must be 1-200 characters without "/", "\\" or control characters';

/** One AI SDK UI message (`UIMessage`): only the last one, a user message, is read. */
export class UiMessageDto {
  @ApiProperty({ description: 'the message id the client gave it' })
  @IsString() @MaxLength(200)
  id: string;

  @ApiProperty({ enum: ['system', 'user', 'assistant'] })
  @IsIn(['system', 'user', 'assistant'], { message: 'role must be "system", "user" or "assistant"' })
  role: 'system' | 'user' | 'assistant';

  @ApiPropertyOptional({ description: 'the client\'s own metadata (ignored)' })
  @IsOptional()
  metadata?: unknown;

  @ApiProperty({ type: 'array', items: { type: 'object' }, description: 'UI message parts; in the last (user) message only `text` parts are accepted' })
  @IsArray() @IsObject({ each: true, message: 'each of parts must be an object' })
  parts: Array<Record<string, unknown>>;
}

/**
 * Body of POST /api/chat/ui: what the AI SDK's `DefaultChatTransport` sends (`id`, `messages`,
 * `trigger`, `messageId`), plus the fields of the chat routes a client may add through the
 * transport's `body` option.
 */
export class UiChatRequestDto {
  @ApiProperty({ description: 'the chat id: a UUID is the conversation id; any other id maps to a conversation of the project (docs/API.md)', example: 'd2x8Hk3Lq0ZbT9aF' })
  @IsString({ message: 'id must be a string' }) @Matches(CHAT_ID_PATTERN, { message: CHAT_ID_MESSAGE })
  id: string;

  @ApiProperty({ type: [UiMessageDto], description: 'the chat as the client holds it; the last message must be the user\'s, and its text is the new message (the stored conversation is the history the model sees)' })
  @IsArray() @ArrayMinSize(1, { message: 'messages must not be empty' }) @ArrayMaxSize(10_000) @ValidateNested({ each: true }) @Type(() => UiMessageDto)
  messages: UiMessageDto[];

  @ApiPropertyOptional({ enum: ['submit-message', 'regenerate-message'], default: 'submit-message', description: 'regenerate-message runs the last user message again as a new turn (the earlier answer stays stored)' })
  @IsOptional() @IsIn(['submit-message', 'regenerate-message'], { message: 'trigger must be "submit-message" or "regenerate-message"' })
  trigger?: 'submit-message' | 'regenerate-message';

  @ApiPropertyOptional({ description: 'regenerate-message: the assistant message being regenerated (informational)' })
  @IsOptional() @IsString() @MaxLength(200)
  messageId?: string;

  @ApiPropertyOptional({ default: 'default', pattern: PROJECT_ID_PATTERN.source })
  @IsOptional() @Matches(PROJECT_ID_PATTERN, { message: PROJECT_ID_MESSAGE })
  projectId?: string;

  @ApiPropertyOptional({ enum: ['act', 'plan'], default: 'act' })
  @IsOptional() @IsIn(['act', 'plan'], { message: 'mode must be "act" or "plan"' })
  mode?: 'act' | 'plan';

  @ApiPropertyOptional({ type: SendMessageOptionsDto, description: 'the chat routes\' options (model, maxIterations, debugShowToolResults, detach…)' })
  @IsOptional() @ValidateNested() @Type(() => SendMessageOptionsDto)
  options?: SendMessageOptionsDto;
}

/** Query of GET /api/chat/ui/:chatId/stream. */
export class UiStreamQueryDto {
  @ApiPropertyOptional({ default: 'default', pattern: PROJECT_ID_PATTERN.source })
  @IsOptional() @Matches(PROJECT_ID_PATTERN, { message: PROJECT_ID_MESSAGE })
  projectId?: string;
}
