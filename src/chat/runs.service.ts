import { Injectable } from '@nestjs/common';
import { ChatException, ChatExceptionCode } from './chat.exception';
import { mapRun, type RunDto } from './dto/chat-response.dto';
import { RunRepository } from './repositories/run.repository';
import { RunControlService } from './run-control.service';
import { RunSweeperService } from './run-sweeper.service';

/** Run status and control requests (cancel, pause). */
@Injectable()
export class RunsService {
  constructor(
    private readonly runs: RunRepository,
    private readonly control: RunControlService,
    private readonly closer: RunSweeperService,
  ) {}

  async get(requestId: string): Promise<RunDto> {
    const r = await this.runs.findById(requestId);
    if (!r) throw new ChatException(ChatExceptionCode.RUN_NOT_FOUND, `Run ${requestId} not found`);
    return mapRun(r);
  }

  /** Stores the cancel flag and aborts the run if it executes here. A paused run is cancelled at once. */
  async cancel(requestId: string): Promise<RunDto> {
    const r = await this.runs.findById(requestId);
    if (!r) throw new ChatException(ChatExceptionCode.RUN_NOT_FOUND, `Run ${requestId} not found`);
    if (r.status === 'paused') {
      // nobody runs it: close it here, keeping what it streamed before the pause
      if (await this.runs.cancelPaused(requestId)) await this.closer.closeFromStoredEvents(r, 'cancelled');
      return this.get(requestId);
    }
    if (r.status !== 'running') throw new ChatException(ChatExceptionCode.RUN_FINISHED, `Run ${requestId} is already ${r.status}`);
    await this.runs.requestControl(requestId, 'cancel');
    if (!this.control.cancelLocal(requestId, 'cancelled')) await this.control.broadcast(requestId, 'cancel');
    return this.get(requestId);
  }

  /** Asks a running run to stop at its next natural pause point. */
  async pause(requestId: string): Promise<RunDto> {
    const r = await this.runs.findById(requestId);
    if (!r) throw new ChatException(ChatExceptionCode.RUN_NOT_FOUND, `Run ${requestId} not found`);
    if (r.status !== 'running') throw new ChatException(ChatExceptionCode.RUN_NOT_RESUMABLE, `Run ${requestId} is ${r.status}; only a running run can be paused`);
    if (r.protocol !== 'two-stage') {
      throw new ChatException(ChatExceptionCode.RUN_NOT_RESUMABLE, `Run ${requestId} uses ${r.protocol}, which has no pause point; only two-stage runs pause (cancel stops any run)`);
    }
    await this.runs.requestControl(requestId, 'pause');
    if (!this.control.pauseLocal(requestId)) await this.control.broadcast(requestId, 'pause');
    return this.get(requestId);
  }
}
