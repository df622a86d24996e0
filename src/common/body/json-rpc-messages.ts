import type { Request } from 'express';

/** A JSON-RPC message as far as a guard reads it before the protocol SDK has validated it. */
export interface JsonRpcMessage {
  method?: unknown;
  params?: unknown;
}

/**
 * The messages of a POSTed JSON-RPC body, a single message or a batch alike. Entries that are
 * not objects are dropped: they cannot name a method, and the SDK answers them with its own error.
 */
export function jsonRpcMessages(req: Request): JsonRpcMessage[] {
  const body: unknown = req.body;
  const entries: unknown[] = Array.isArray(body) ? body : [body];
  return entries.filter((m): m is JsonRpcMessage => typeof m === 'object' && m !== null);
}
