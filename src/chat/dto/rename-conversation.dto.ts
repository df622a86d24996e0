import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsString, MaxLength, MinLength } from 'class-validator';

/** the length new conversations get from their first message */
export const TITLE_MAX_LENGTH = 120;

/** Body of PATCH /api/chat/conversations/:id. */
export class RenameConversationDto {
  @ApiProperty({ minLength: 1, maxLength: TITLE_MAX_LENGTH, example: 'Roadmap summary', description: 'trimmed; must not be empty' })
  @Transform(({ value }) => (typeof value === 'string' ? value.trim() : value))
  @IsString({ message: 'title must be a string' })
  @MinLength(1, { message: 'title must not be empty' })
  @MaxLength(TITLE_MAX_LENGTH, { message: `title must be at most ${TITLE_MAX_LENGTH} characters` })
  title: string;
}
