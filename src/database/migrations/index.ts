import { InitialSchema1763800000000 } from './1763800000000-initial-schema';
import { KnowledgeChunks1763900000000 } from './1763900000000-knowledge-chunks';
import { ApiKeys1764100000000 } from './1764100000000-api-keys';
import { McpToolPins1764200000000 } from './1764200000000-mcp-tool-pins';
import { RunForks1764213000000 } from './1764213000000-run-forks';
import { SharedLimits1764250000000 } from './1764250000000-shared-limits';
import { PackedChunks1764300000000 } from './1764300000000-packed-chunks';
import { ToolApprovalOverrides1764420000000 } from './1764420000000-tool-approval-overrides';
import { Approvals1764440000000 } from './1764440000000-approvals';
import { ConversationTurns1764460000000 } from './1764460000000-conversation-turns';
import { Webhooks1764500000000 } from './1764500000000-webhooks';
import { IdempotencyKeys1764520000000 } from './1764520000000-idempotency-keys';
import { TimePartitions1764540000000 } from './1764540000000-time-partitions';
import { StorageLifecycle1764560000000 } from './1764560000000-storage-lifecycle';
import { RunUsage1764580000000 } from './1764580000000-run-usage';
import { RunTakeovers1764620000000 } from './1764620000000-run-takeovers';
import { Budgets1764660000000 } from './1764660000000-budgets';
import { BudgetAdmit1764680000000 } from './1764680000000-budget-admit';
import { BudgetCounters1764720000000 } from './1764720000000-budget-counters';
import { CompactedText1764730000000 } from './1764730000000-compacted-text';
import { KeyedExecutionProgress1764740000000 } from './1764740000000-keyed-execution-progress';
import { RunEventsCascade1764750000000 } from './1764750000000-run-events-cascade';
import { RunReleasedBy1764770000000 } from './1764770000000-run-released-by';
import { AutovacuumDeletedTables1764790000000 } from './1764790000000-autovacuum-deleted-tables';

/** Every migration, oldest first. Add new ones at the end. */
export const MIGRATIONS = [InitialSchema1763800000000, KnowledgeChunks1763900000000, ApiKeys1764100000000, McpToolPins1764200000000, RunForks1764213000000, SharedLimits1764250000000, PackedChunks1764300000000, ToolApprovalOverrides1764420000000, Approvals1764440000000, ConversationTurns1764460000000, Webhooks1764500000000, IdempotencyKeys1764520000000, TimePartitions1764540000000, StorageLifecycle1764560000000, RunUsage1764580000000, RunTakeovers1764620000000, Budgets1764660000000, BudgetAdmit1764680000000, BudgetCounters1764720000000, CompactedText1764730000000, KeyedExecutionProgress1764740000000, RunEventsCascade1764750000000, RunReleasedBy1764770000000, AutovacuumDeletedTables1764790000000];
