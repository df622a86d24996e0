import { createHash } from 'node:crypto';
import { UUID_PATTERN as UUID } from '../common/util/uuid';

/**
 * The rule that maps an AI SDK chat id (the `id` of `DefaultChatTransport`'s body, the `:chatId` of
 * its resume request) to an Orion conversation: a UUID is the conversation's id itself; any other
 * id names the conversation whose id is the name-based UUID (RFC 9562 version 5) of the project
 * and the chat id, so the same chat id in another project is another conversation, and no table
 * is needed to find it again. The `start` part's metadata carries the conversation id.
 */

/** The namespace of Orion's chat ids (a random UUID fixed once; changing it would orphan every mapped chat). */
const CHAT_NAMESPACE = Buffer.from('6f1c9a52d3b84e0f9c2a7b5e41d8f036', 'hex');

export function conversationIdForChat(projectId: string, chatId: string): string {
  if (UUID.test(chatId)) return chatId.toLowerCase();
  const hash = createHash('sha1').update(CHAT_NAMESPACE).update(`${projectId}\n${chatId}`, 'utf8').digest();
  const b = hash.subarray(0, 16);
  b[6] = (b[6] & 0x0f) | 0x50; // version 5
  b[8] = (b[8] & 0x3f) | 0x80; // RFC 9562 variant
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
