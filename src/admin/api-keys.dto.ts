import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsRFC3339, IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';

export class CreateApiKeyDto {
  @ApiProperty({ example: 'shop frontend', maxLength: 128 })
  @IsString() @MinLength(1) @MaxLength(128)
  name: string;

  @ApiProperty({ type: [String], example: ['shop'], description: "project ids the key may use, or ['*'] for all" })
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(100)
  @Matches(/^(\*|[A-Za-z0-9_-]{1,64})$/, { each: true, message: "each project must match [A-Za-z0-9_-]{1,64} or be '*'" })
  projects: string[];

  @ApiProperty({ enum: ['admin', 'user'], description: 'admin manages keys; user runs turns' })
  @IsIn(['admin', 'user'])
  role: 'admin' | 'user';

  @ApiPropertyOptional({ format: 'date-time', description: 'the key stops working at this time (RFC 3339, in the future)' })
  // RFC 3339 only: looser ISO 8601 forms ("20200101T000000Z", week dates) are not all read the
  // same way by Date.parse and by the database
  @IsOptional() @IsRFC3339()
  expiresAt?: string;
}

export class ApiKeyDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: [String] }) projects: string[];
  @ApiProperty({ enum: ['admin', 'user'] }) role: 'admin' | 'user';
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) expiresAt: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) revokedAt: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

export class CreatedApiKeyDto extends ApiKeyDto {
  @ApiProperty({ description: 'the key itself, shown only in this answer (only its hash is stored)' }) key: string;
}
