import type { DataSource } from 'typeorm';
import type { TraceRecord } from '../trace/trace-sink.port';
import type { TraceWriterService } from '../trace/trace-writer.service';
import { MetricsService } from './metrics.service';
import { TurnMetricsObserver } from './turn-metrics.observer';

describe('TurnMetricsObserver: approvals', () => {
  let metrics: MetricsService;
  let o: TurnMetricsObserver;
  beforeEach(() => {
    // the scrape-time gauges read these; the approval metrics are moved by the observer alone
    metrics = new MetricsService({ queued: 0, droppedEvents: 0 } as unknown as TraceWriterService, { logger: {}, driver: {} } as unknown as DataSource);
    o = new TurnMetricsObserver(metrics, { provider: 'openai', model: 'm1' }, (name) => name === 'write_file');
  });

  const rec = (requestId: string, type: string, details: Record<string, unknown>): TraceRecord => ({ requestId, type, details }) as TraceRecord;
  const decided = async () => Object.fromEntries((await metrics.approvals.get()).values.map((v) => [String(v.labels.decision), v.value]));
  const pending = async () => (await metrics.approvalsPending.get()).values[0]?.value ?? 0;
  const executions = async () => (await metrics.toolExecutions.get()).values.map((v) => `${String(v.labels.outcome)}=${v.value}`);

  it('counts decisions by approve, deny and timeout, and keeps the pending gauge to what still waits here', async () => {
    o.onRecord(rec('r1', 'run_started', { protocol: 'two-stage' }), 0);
    o.onRecord(rec('r1', 'approval_requested', { approvalId: 'a1', callId: 'c1', tool: 'write_file' }), 1);
    o.onRecord(rec('r2', 'run_started', { protocol: 'unified' }), 1);
    o.onRecord(rec('r2', 'approval_requested', { approvalId: 'a2', callId: 'c2', tool: 'write_file' }), 2);
    o.onRecord(rec('r2', 'approval_requested', { approvalId: 'a3', callId: 'c3', tool: 'write_file' }), 2);
    expect(await pending()).toBe(3);

    o.onRecord(rec('r1', 'approval_decided', { approvalId: 'a1', decision: 'approve', keyId: 'k1', edited: true, waitMs: 40 }), 41);
    o.onRecord(rec('r2', 'approval_decided', { approvalId: 'a2', decision: 'deny', keyId: null, edited: false, waitMs: 50 }), 52);
    o.onRecord(rec('r2', 'approval_decided', { approvalId: 'a3', decision: 'deny', keyId: 'timeout', edited: false, waitMs: 600000 }), 600002);
    expect(await decided()).toEqual({ approve: 1, deny: 1, timeout: 1 });
    expect(await pending()).toBe(0);
  });

  it('forgets the approvals of a run that ends or pauses while it waits (they are voided), and never goes below zero', async () => {
    o.onRecord(rec('r1', 'run_started', { protocol: 'two-stage' }), 0);
    o.onRecord(rec('r1', 'approval_requested', { approvalId: 'a1' }), 1);
    o.onRecord(rec('r2', 'run_started', { protocol: 'two-stage' }), 0);
    o.onRecord(rec('r2', 'approval_requested', { approvalId: 'a2' }), 1);
    o.onRecord(rec('r1', 'run_cancelled', { stopReason: 'cancelled' }), 5);
    expect(await pending()).toBe(1);
    o.onRecord(rec('r2', 'run_paused', {}), 6);
    expect(await pending()).toBe(0);

    // a run taken over from a dead instance: its approval was asked there, decided here
    o.onRecord(rec('r3', 'approval_decided', { approvalId: 'elsewhere', decision: 'approve', keyId: 'k1', edited: false }), 7);
    expect(await pending()).toBe(0);
    expect(await decided()).toEqual({ approve: 1 });
  });

  it('counts a waiting call once, with its final outcome, and no odd decision as a label', async () => {
    o.onRecord(rec('r1', 'tool_result', { name: 'write_file', callId: 'c1', outcome: 'approval_required', latencyMs: 1 }), 1);
    o.onRecord(rec('r1', 'tool_result', { name: 'write_file', callId: 'c1', outcome: 'success', latencyMs: 3 }), 9);
    o.onRecord(rec('r1', 'tool_result', { name: 'write_file', callId: 'c2', outcome: 'approval_required', latencyMs: 1 }), 10);
    o.onRecord(rec('r1', 'tool_result', { name: 'write_file', callId: 'c2', outcome: 'denied', latencyMs: 0 }), 12);
    expect((await executions()).sort()).toEqual(['denied=1', 'success=1']);

    o.onRecord(rec('r1', 'approval_decided', { approvalId: 'x', decision: '"}injected', keyId: 'k1' }), 13);
    expect(await decided()).toEqual({});
  });
});

describe('TurnMetricsObserver: takeovers', () => {
  it('counts runs taken over by protocol and outcome, a keyed tool-only execution continued by a retry as tool-only', async () => {
    const metrics = new MetricsService({ queued: 0, droppedEvents: 0 } as unknown as TraceWriterService, { logger: {}, driver: {} } as unknown as DataSource);
    const o = new TurnMetricsObserver(metrics, { provider: 'openai', model: 'm1' }, () => false);
    const rec = (type: string, details: Record<string, unknown>): TraceRecord => ({ requestId: 'r', type, details }) as TraceRecord;
    o.onRecord(rec('run_taken_over', { route: 'two-stage', outcome: 'continued', handedOver: true }), 1);
    o.onRecord(rec('run_taken_over', { route: 'unified', outcome: 'failed' }), 2);
    o.onRecord(rec('tool_execution_continued', { mode: 'Classic', decided: 2, finished: 1, cutOff: null }), 3);
    const counted = (await metrics.takenOver.get()).values.map((v) => `${String(v.labels.route)}/${String(v.labels.outcome)}=${v.value}`);
    expect(counted.sort()).toEqual(['tool-only/continued=1', 'two-stage/continued=1', 'unified/failed=1']);
  });
});
