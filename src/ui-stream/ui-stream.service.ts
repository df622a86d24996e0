import { Inject, Injectable } from '@nestjs/common';
import { badFields, type FieldError } from '../common/errors/field-errors';
import { concatMap, defer, endWith, type Observable } from 'rxjs';
import { ChatService } from '../chat/chat.service';
import type { SendMessageDto } from '../chat/dto/send-message.dto';
import type { IdempotentSend } from '../common/idempotency/idempotency-key';
import { PROJECT_OWNERSHIP, type ProjectOwnershipPort } from '../common/auth/project-ownership.port';
import type { ClientFlow } from '../common/sse/client-flow';
import type { WireMessage } from '../common/sse/message-events';
import { RunRepository } from '../runs/repositories/run.repository';
import type { SentEvent } from '../runs/run-event-bus.service';
import { RunEventsService } from '../runs/run-events.service';
import { conversationIdForChat } from './chat-id';
import type { UiChatRequestDto, UiMessageDto } from './dto/ui-chat-request.dto';
import { INITIAL_UI_STREAM_STATE, toUiParts } from './ui-stream.mapper';

/** The response header the AI SDK's transports look for. */
export const UI_MESSAGE_STREAM_HEADER = 'x-vercel-ai-ui-message-stream';
export const UI_MESSAGE_STREAM_VERSION = 'v1';

/** The chat routes' limit on a message's text (SendMessageDto.content). */
const MAX_CONTENT = 32_000;

/**
 * The AI SDK UI message stream edge: a `DefaultChatTransport` request becomes a unified chat turn
 * (ChatService, as the chat route starts one), and the run's events, live or read back for a
 * resume, become UI message stream parts (ui-stream.mapper).
 */
@Injectable()
export class UiStreamService {
  constructor(
    private readonly chat: ChatService,
    private readonly runs: RunRepository,
    private readonly runEvents: RunEventsService,
    @Inject(PROJECT_OWNERSHIP) private readonly ownership: ProjectOwnershipPort,
  ) {}

  /**
   * A turn for the chat's last user message, in the conversation the chat id maps to (created
   * with the turn when the chat is new). Refused with 400 before anything is stored when the last
   * message is not a user message with text.
   */
  async send(dto: UiChatRequestDto, flow: ClientFlow, clientGone: AbortSignal, idempotency?: IdempotentSend, keyId?: string): Promise<Observable<WireMessage>> {
    const projectId = dto.projectId ?? 'default';
    const message: SendMessageDto = {
      projectId,
      conversationId: conversationIdForChat(projectId, dto.id),
      content: lastUserText(dto.messages),
      ...(dto.mode !== undefined && { mode: dto.mode }),
      ...(dto.options !== undefined && { options: dto.options }),
    };
    return uiMessageStream(await this.chat.send('unified', message, flow, clientGone, { createMissing: true, idempotency, keyId, replayLive: true }));
  }

  /**
   * The chat's active run, from its first stored event (the AI SDK replaces the message it was
   * streaming with the replay), then live until it ends; null when the chat has no active run in
   * this project (the route answers 204). The replay leaves out what a takeover superseded (issue
   * 44): the AI SDK has no part that takes text back, so the message it rebuilds holds the
   * continued answer once only if those events are never sent.
   */
  async resume(projectId: string, chatId: string, flow: ClientFlow, stop: AbortSignal): Promise<Observable<WireMessage> | null> {
    const conversationId = conversationIdForChat(projectId, chatId);
    // another project's chat is answered like an unknown one: its existence is not revealed
    if ((await this.ownership.conversationProject(conversationId)) !== projectId) return null;
    const requestId = await this.runs.activeOf(conversationId);
    if (!requestId) return null;
    return uiMessageStream(await this.runEvents.followLive(requestId, flow, stop));
  }
}

/** A run's events as UI message stream parts, one `data:` line each, then `[DONE]` as the AI SDK's own servers end it. */
export function uiMessageStream(events: Observable<SentEvent>): Observable<WireMessage> {
  return defer(() => {
    let state = INITIAL_UI_STREAM_STATE;
    return events.pipe(
      concatMap((event) => {
        const mapped = toUiParts(state, event);
        state = mapped.state;
        return mapped.parts.map((part): WireMessage => ({ data: part }));
      }),
      endWith<WireMessage>({ data: '[DONE]', json: '[DONE]' }),
    );
  });
}

/** "a number", "null", "an object": what a value is, for a message. */
const kindOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`);

/**
 * The new message: the text parts of the last message, which must be the user's. A bad one is a
 * 400 like every validation error: one message per bad field, each named by its path
 * (`messages[0].parts[1].text`), in `message` and `fields`.
 */
function lastUserText(messages: UiMessageDto[]): string {
  const at = messages.length - 1;
  const last = messages[at];
  const path = `messages[${at}]`;
  if (last.role !== 'user') throw badFields([{ field: `${path}.role`, message: `${path}.role must be "user": the last of messages must be the user's message (got role "${last.role}")` }]);
  const wrong: FieldError[] = last.parts.flatMap((p, i): FieldError[] => {
    const field = `${path}.parts[${i}]`;
    if (p.type !== 'text') return [{ field: `${field}.type`, message: `${field}.type must be "text": the last user message may only have text parts (got ${p.type === undefined ? 'no type' : JSON.stringify(p.type)})` }];
    if (p.text === undefined) return [{ field: `${field}.text`, message: `${field}.text is required (a string)` }];
    if (typeof p.text !== 'string') return [{ field: `${field}.text`, message: `${field}.text must be a string (got ${kindOf(p.text)})` }];
    return [];
  });
  if (wrong.length) throw badFields(wrong);
  const content = last.parts.map((p) => p.text as string).join('\n');
  if (!content.trim()) throw badFields([{ field: `${path}.parts`, message: `${path}.parts: the last user message has no text` }]);
  if (content.length > MAX_CONTENT) throw badFields([{ field: `${path}.parts`, message: `${path}.parts: the last user message's text must be at most ${MAX_CONTENT} characters (got ${content.length})` }]);
  return content;
}
