import { parseHTML } from 'linkedom';

/**
 * The approval card's DOM (public/assets/approval-card.js) on linkedom's document: what a person
 * clicks and sees, without a browser (the browser suite drives the whole page).
 */
const { document, window, Node } = parseHTML('<!doctype html><html><body></body></html>');
Object.assign(globalThis, { document, Node });

type State = Record<string, any>;
const { ApprovalCards } = require('./public/assets/approval-card.js') as { ApprovalCards: new (decider: () => unknown) => { root: any; render: (a: State[]) => void } };
const { createTurnState, applyEvent } = require('./public/assets/turn-state.js') as {
  createTurnState: () => State;
  applyEvent: (s: State, type: string, data: Record<string, unknown>) => boolean;
};
const { approvalSending, approvalRefused } = require('./public/assets/approval-state.js') as Record<string, (s: State, id: string, m?: string) => void>;

const env = (seq: number) => ({ requestId: 'r1', projectId: 'default', conversationId: 'c1', seq, phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1 });

describe('approval card (DOM)', () => {
  let s: State;
  let calls: unknown[][];
  let cards: InstanceType<typeof ApprovalCards>;
  const q = (id: string) => cards.root.querySelector(`[data-testid="${id}"]`);
  const click = (id: string) => q(id).dispatchEvent(new window.Event('click'));

  beforeEach(() => {
    s = createTurnState();
    calls = [];
    cards = new ApprovalCards(() => (...args: unknown[]) => calls.push(args));
    applyEvent(s, 'approval_required', { ...env(1), approvalId: 'a1', tool: 'write_file', callId: 'k1', arguments: { path: 'notes.md' }, reason: 'configured', expiresAt: '2026-11-27T14:00:00.000Z' });
    cards.render(s.approvals);
  });

  it('shows the tool and its arguments, and sends Approve and Deny with its reason', () => {
    const card = q('approval-card');
    expect(card.getAttribute('data-approval-id')).toBe('a1');
    expect(card.getAttribute('data-status')).toBe('pending');
    expect(q('approval-tool').textContent).toBe('write_file');
    expect(q('approval-arguments').textContent).toBe('{\n  "path": "notes.md"\n}');
    click('approval-approve');
    q('approval-deny-reason').value = 'wrong file';
    click('approval-deny');
    expect(calls).toEqual([
      ['a1', 'approve', {}],
      ['a1', 'deny', { reason: 'wrong file' }],
    ]);
  });

  it('checks edited arguments before sending: not JSON is said on the card and nothing is sent', () => {
    click('approval-edit');
    const editor = q('approval-arguments-input');
    expect(editor.value).toBe('{\n  "path": "notes.md"\n}');
    editor.value = '{"path": ';
    click('approval-approve-edited');
    expect(calls).toEqual([]);
    expect(q('approval-error').hidden).toBe(false);
    expect(q('approval-error').textContent).toMatch(/^The arguments are not valid JSON/);
    // a repaint while the person types keeps what they typed
    cards.render(s.approvals);
    expect(editor.value).toBe('{"path": ');
    editor.value = '{"path": "other.md"}';
    click('approval-approve-edited');
    expect(calls).toEqual([['a1', 'approve', { arguments: { path: 'other.md' } }]]);
  });

  it('turns its buttons off while sending and after the decision, shows a refusal, then the decision and who made it', () => {
    const buttons = ['approval-approve', 'approval-deny', 'approval-edit', 'approval-approve-edited'];
    approvalSending(s, 'a1');
    cards.render(s.approvals);
    expect(buttons.map((b) => q(b).disabled)).toEqual([true, true, true, true]);
    click('approval-approve');
    expect(calls).toEqual([]);

    approvalRefused(s, 'a1', 'Not sent: arguments must have required property path');
    cards.render(s.approvals);
    expect(buttons.map((b) => q(b).disabled)).toEqual([false, false, false, false]);
    expect(q('approval-error').textContent).toBe('Not sent: arguments must have required property path');

    applyEvent(s, 'approval_decided', { ...env(2), approvalId: 'a1', decision: 'deny', edited: false, by: 'key-3', reason: 'no' });
    cards.render(s.approvals);
    expect(q('approval-card').getAttribute('data-status')).toBe('denied');
    expect(q('approval-decision').textContent).toBe('Denied by key-3: no');
    expect(q('approval-error').hidden).toBe(true);
    expect(buttons.map((b) => q(b).disabled)).toEqual([true, true, true, true]);
    expect(q('approval-card').querySelector('.approval-actions').hidden).toBe(true);
    // one card per approval, however often it is drawn
    expect(cards.root.querySelectorAll('[data-testid="approval-card"]').length).toBe(1);
  });

  it('only shows when no one can decide here (a stored turn)', () => {
    const shown = new ApprovalCards(() => null);
    shown.render(s.approvals);
    const approve = shown.root.querySelector('[data-testid="approval-approve"]');
    expect(approve.disabled).toBe(true);
  });
});
