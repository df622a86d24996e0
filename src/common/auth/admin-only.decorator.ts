import { SetMetadata } from '@nestjs/common';

export const ADMIN_ONLY = 'orion:adminOnly';

/** Only a key with role `admin` may call the route (key management, MCP approvals). */
export const AdminOnly = (): MethodDecorator & ClassDecorator => SetMetadata(ADMIN_ONLY, true);
