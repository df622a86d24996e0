import type { AgentCard } from '@a2a-js/sdk';

/** Where the JSON-RPC endpoint is mounted. */
export const A2A_PATH = 'a2a';
export const SKILL_ID = 'chat-turn';

/**
 * Orion's agent card: one skill, the chat turn, over JSON-RPC at `<base>/a2a`, with the API key
 * as a bearer token.
 */
export function agentCard(baseUrl: string): AgentCard {
  return {
    name: 'Orion',
    description: "Answers questions about a project's documents and the web with sources: it runs tool-calling turns (files, knowledge base, web search, MCP tools) under loop control and approvals.",
    supportedInterfaces: [{ url: `${baseUrl}/${A2A_PATH}`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
    provider: undefined,
    version: '0.1.0',
    // pushNotifications false: a message's push config is served, as Orion's own signed webhook, but not A2A's push-config methods nor its payload
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: { apiKey: { scheme: { $case: 'httpAuthSecurityScheme', value: { description: 'an Orion API key: Authorization: Bearer <key>', scheme: 'bearer', bearerFormat: '' } } } },
    securityRequirements: [{ schemes: { apiKey: { list: [] } } }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [
      {
        id: SKILL_ID,
        name: 'Ask Orion',
        description:
          "One chat turn: the message's text is the question; Orion runs its tools and answers with an answer artifact (text) and a sources artifact (data). contextId continues a conversation. A tool call that needs approval puts the task in input-required until a person decides it on Orion's approvals route.",
        tags: ['research', 'documents', 'rag', 'web', 'tools'],
        examples: ['What does the install guide say about upgrades?', 'Summarise the files in the guides folder.'],
        inputModes: ['text/plain'],
        outputModes: ['text/plain', 'application/json'],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}
