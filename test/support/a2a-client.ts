import { randomUUID } from 'node:crypto';
import { type Message, Role } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

/** A user's text message as the A2A SDK types it (every field spelled out: the SDK's types have no defaults); `contextId` continues a conversation. */
export const userMessage = (text: string, contextId = ''): Message => ({
  messageId: randomUUID(),
  contextId,
  taskId: '',
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

/** The parameters of message/send and message/stream for one message. */
export const sendParams = (message: Message) => ({ tenant: '', message, configuration: undefined, metadata: undefined });

/** A client the way an A2A user makes one: from the agent card at `baseUrl`, with the key on every request. */
export function a2aClient(baseUrl: string, key: string): Promise<Client> {
  const authed: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${key}` } });
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: authed })] })).createFromUrl(baseUrl);
}
