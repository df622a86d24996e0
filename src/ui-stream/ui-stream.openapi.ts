import { STREAM_EXAMPLES } from '../common/openapi/request-examples';
import { INITIAL_UI_STREAM_STATE, toUiParts, type UiPart } from './ui-stream.mapper';

/**
 * The text/event-stream example of the UI message stream routes: the chat route's example turn
 * (the replay model listing the files) as this route sends it, made by the same mapper, so the
 * document cannot drift from what the route does.
 */
export function uiStreamExample(): string {
  const events = [...STREAM_EXAMPLES.sendMessage.matchAll(/^event: (\w+)\nid: (\d+)\ndata: (.*)$/gm)].map((m) => ({ type: m[1], seq: Number(m[2]), data: JSON.parse(m[3]) as Record<string, unknown> }));
  let state = INITIAL_UI_STREAM_STATE;
  const parts: UiPart[] = [];
  for (const e of events) {
    const r = toUiParts(state, e);
    state = r.state;
    parts.push(...r.parts);
  }
  return `\n${parts.map((p) => `data: ${JSON.stringify(p)}\n\n`).join('')}data: [DONE]\n\n`;
}
