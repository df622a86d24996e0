import { CanActivate, Injectable } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { ChatException, ChatExceptionCode } from './chat.exception';

/** The two-stage route exists only with TWO_STAGE_ENABLED=true; checked before the body is validated. */
@Injectable()
export class TwoStageEnabledGuard implements CanActivate {
  constructor(private readonly config: AppConfigService) {}

  canActivate(): boolean {
    if (!this.config.get('TWO_STAGE_ENABLED')) {
      throw new ChatException(ChatExceptionCode.TWO_STAGE_DISABLED, 'The two-stage route is disabled; start Orion with TWO_STAGE_ENABLED=true');
    }
    return true;
  }
}
