// The approval cards of a turn (issue #32): the tool, its arguments, Approve, Deny with an
// optional reason, and Edit arguments (JSON checked before sending). Each card is built once
// and then updated in place, so repaints while the turn streams never wipe what a person is
// typing. Selectors for tests: [data-testid=approval-card][data-approval-id][data-status].

import { el } from './dom.js';
import { approvalTitle, canDecide, decisionText, parseEditedArguments, prettyArguments } from './approval-state.js';

/**
 * @typedef {import('./approval-state.js').Approval} Approval
 * @typedef {(approvalId: string, decision: 'approve' | 'deny', extra: { reason?: string, arguments?: Record<string, unknown> }) => void} DecideFn
 */

export class ApprovalCards {
  /** @param {() => DecideFn | null} decider who sends a decision; null: the cards only show (a stored turn) */
  constructor(decider) {
    this.decider = decider;
    this.root = el('div', { class: 'approvals', 'aria-label': 'Approvals' });
    /** @type {Map<string, ApprovalCard>} */
    this.cards = new Map();
  }

  /** @param {Approval[]} approvals */
  render(approvals) {
    for (const a of approvals) {
      let card = this.cards.get(a.approvalId);
      if (!card) {
        card = new ApprovalCard(a, this.decider);
        this.cards.set(a.approvalId, card);
        this.root.append(card.node);
      }
      card.update(a);
    }
  }
}

class ApprovalCard {
  /** @param {Approval} a @param {() => DecideFn | null} decider */
  constructor(a, decider) {
    this.decider = decider;
    this.approvalId = a.approvalId;
    this.title = el('span', { class: 'approval-title', 'data-testid': 'approval-title' }, approvalTitle(a));
    this.tool = el('span', { class: 'approval-tool', 'data-testid': 'approval-tool' }, a.tool);
    this.reason = el('span', { class: 'approval-reason muted small' });
    this.expires = el('span', { class: 'approval-expires muted small' });
    this.args = el('pre', { class: 'approval-arguments', 'data-testid': 'approval-arguments', tabindex: '0', 'aria-label': `Arguments of ${a.tool}` });
    this.decision = el('p', { class: 'approval-decision', 'data-testid': 'approval-decision', role: 'status' });
    this.error = el('p', { class: 'approval-error', 'data-testid': 'approval-error', role: 'alert', hidden: true });

    const reasonId = `approval-reason-${a.approvalId}`;
    this.denyReason = /** @type {HTMLInputElement} */ (el('input', { id: reasonId, type: 'text', class: 'approval-deny-reason', 'data-testid': 'approval-deny-reason', maxlength: '1000', autocomplete: 'off', placeholder: 'optional' }));
    this.approve = button('Approve', 'approval-approve', 'button primary');
    this.deny = button('Deny', 'approval-deny', 'button danger');
    this.edit = button('Edit arguments', 'approval-edit', 'button');
    this.edit.setAttribute('aria-expanded', 'false');

    const editorId = `approval-editor-${a.approvalId}`;
    this.editorText = /** @type {HTMLTextAreaElement} */ (el('textarea', { id: editorId, class: 'approval-editor-text', 'data-testid': 'approval-arguments-input', rows: '6', spellcheck: 'false' }));
    this.approveEdited = button('Approve with these arguments', 'approval-approve-edited', 'button primary');
    this.editor = el('div', { class: 'approval-editor', hidden: true }, [el('label', { for: editorId }, 'Arguments (JSON)'), this.editorText, el('div', { class: 'row' }, this.approveEdited)]);
    this.actions = el('div', { class: 'approval-actions' }, [
      el('div', { class: 'row' }, [this.approve, this.deny, this.edit]),
      el('div', { class: 'field' }, [el('label', { for: reasonId }, 'Reason for a denial'), this.denyReason]),
      this.editor,
    ]);

    this.node = el('section', { class: 'approval-card', 'data-testid': 'approval-card', 'data-approval-id': a.approvalId, 'aria-label': `Approval for ${a.tool}` }, [
      el('header', { class: 'approval-header' }, [this.title, this.tool, this.reason, this.expires]),
      this.args,
      this.decision,
      this.error,
      this.actions,
    ]);

    this.approve.addEventListener('click', () => this.send('approve', {}));
    this.deny.addEventListener('click', () => this.send('deny', { reason: this.denyReason.value }));
    this.edit.addEventListener('click', () => this.toggleEditor());
    this.approveEdited.addEventListener('click', () => {
      const parsed = parseEditedArguments(this.editorText.value);
      if (!parsed.ok) return this.showError(parsed.error);
      this.send('approve', { arguments: parsed.value });
    });
    /** @type {Approval} */
    this.state = a;
    /** @type {string | null} */
    this.localError = null;
  }

  /** @param {Approval} a */
  update(a) {
    this.state = a;
    this.node.dataset.status = a.status;
    this.node.dataset.sending = String(a.sending);
    this.title.textContent = approvalTitle(a);
    this.tool.textContent = a.tool;
    this.reason.textContent = a.reason ? ` (${a.reason})` : '';
    this.expires.textContent = a.status === 'pending' && a.expiresAt ? ` · expires ${formatTime(a.expiresAt)}` : '';
    const pretty = prettyArguments(a.arguments);
    if (this.args.textContent !== pretty) this.args.textContent = pretty;
    if (this.editor.hidden) this.editorText.value = pretty;
    this.decision.textContent = decisionText(a);
    this.paintError();
    const open = canDecide(a) && this.decider() !== null;
    for (const b of [this.approve, this.deny, this.edit, this.approveEdited]) b.disabled = !open;
    this.denyReason.disabled = !open;
    this.editorText.disabled = !open;
    // decided (or shown from a stored turn): the decision replaces the controls
    this.actions.hidden = a.status !== 'pending';
  }

  toggleEditor() {
    const show = this.editor.hidden;
    this.editor.hidden = !show;
    this.edit.setAttribute('aria-expanded', String(show));
    if (show) {
      this.editorText.value = prettyArguments(this.state.arguments);
      this.editorText.focus();
    } else this.showError(null);
  }

  /** @param {'approve' | 'deny'} decision @param {{ reason?: string, arguments?: Record<string, unknown> }} extra */
  send(decision, extra) {
    const decide = this.decider();
    if (!decide || !canDecide(this.state)) return;
    this.showError(null);
    decide(this.approvalId, decision, extra);
  }

  /** The page's own complaint (arguments that are not JSON), until the next try. @param {string | null} message */
  showError(message) {
    this.localError = message;
    this.paintError();
  }

  /** The server's refusal (kept in the state) or the page's own complaint. */
  paintError() {
    const message = this.state.error ?? this.localError;
    this.error.hidden = !message;
    this.error.textContent = message ?? '';
  }
}

/** @param {string} text @param {string} testId @param {string} cls */
function button(text, testId, cls) {
  return /** @type {HTMLButtonElement} */ (el('button', { type: 'button', class: `${cls} ${testId}`, 'data-testid': testId }, text));
}

/** @param {string} iso */
function formatTime(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}
