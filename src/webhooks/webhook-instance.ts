import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';

/** Names this process in the delivery log's tries (which instance sent each). */
export const WEBHOOK_INSTANCE_ID = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
