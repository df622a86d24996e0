// How a chat turn looks: the live assistant message (status, phase trail, tool activity,
// notices, the answer as sanitized Markdown, sources) and the stored messages of a conversation.

import { ApprovalCards } from './approval-card.js';
import { el } from './dom.js';
import { renderMarkdown } from './markdown.js';
import { renderSources } from './sources-view.js';
import { approvalFromRow, pendingApprovals } from './approval-state.js';
import { isDecisionOutcome, isErrorStep, isSettled, isWaitingForApproval, outcomeLabel, stateFromStored, STATUS_LABELS, stepLabel, turnFlow } from './turn-state.js';

/** The assistant side of a live turn: phases, tool activity, notices, the answer, sources. */
export class TurnView {
  /**
   * @param {HTMLElement | null} container the message list; null for a stored turn, placed by the caller
   * @param {string | null} userText null when following a run whose user message is already shown
   */
  constructor(container, userText) {
    this.container = container;
    this.phases = el('ol', { class: 'phase-trail', 'aria-label': 'Phases' });
    /** the turn's text and tool rows in the order they happened (turnFlow) */
    this.flow = el('div', { class: 'turn-flow' });
    /** sends a person's decision on an approval (set by whoever drives the turn; a stored turn has none) @type {import('./approval-card.js').DecideFn | null} */
    this.onDecide = null;
    this.approvals = new ApprovalCards(() => this.onDecide);
    this.notices = el('div', { class: 'notices' });
    /** the text after the last call (all of it for a turn without tools); earlier text sits between tool rows */
    this.body = el('div', { class: 'markdown', 'aria-busy': 'true' });
    this.sources = el('div', { class: 'sources-wrap' });
    this.error = el('p', { class: 'turn-error', role: 'alert', hidden: true });
    this.footer = el('footer', { class: 'message-footer' });
    this.pill = el('span', { class: 'status-pill' });
    this.article = el('article', { class: 'message assistant live', 'aria-label': 'Assistant' }, [
      el('header', { class: 'turn-header' }, [this.pill, this.phases]),
      this.flow,
      this.approvals.root,
      this.notices,
      this.error,
      this.sources,
      this.footer,
    ]);
    if (container && userText !== null) container.append(userMessage(userText));
    container?.append(this.article);
    this.flow.append(this.body);
    this.rendered = { content: null, tools: '', notices: -1, sources: null, sourcesTools: '', phases: '', flow: '' };
    /** @type {import('./turn-state.js').TurnState | null} */
    this.pending = null;
    /** a stored turn's state (a live turn's belongs to its TurnRunner) @type {import('./turn-state.js').TurnState | null} */
    this.state = null;
    if (container) scrollToEnd(container, true);
  }

  /**
   * A stored turn drawn by the same code as a live one, from the steps its message kept, so a
   * reloaded conversation shows what the live turn showed.
   * @param {Parameters<typeof stateFromStored>[0]} m
   */
  static stored(m) {
    const view = new TurnView(null, null);
    view.article.classList.remove('live');
    view.state = stateFromStored(m);
    view.pending = view.state;
    view.paint();
    return view;
  }

  /**
   * The approvals of a stored turn, read from the approvals route after a reload (its stored
   * steps do not keep them): the cards show each decision and who made it.
   * @param {Record<string, any>[]} rows
   */
  showApprovals(rows) {
    const s = this.state;
    if (!s || !Array.isArray(rows) || rows.length === 0) return;
    for (const row of rows) approvalFromRow(s, row);
    this.pending = s;
    this.paint();
  }

  /** Coalesces bursts of events into one paint per frame. @param {import('./turn-state.js').TurnState} s */
  update(s) {
    const scheduled = this.pending !== null;
    this.pending = s;
    if (!scheduled) requestAnimationFrame(() => this.paint());
  }

  paint() {
    const s = this.pending;
    this.pending = null;
    if (!s) return;
    const nearEnd = this.container !== null && isNearEnd(this.container);
    this.article.dataset.status = s.status;
    const awaiting = !isSettled(s.status) && pendingApprovals(s).length > 0;
    this.pill.textContent = awaiting ? 'Waiting for approval' : (STATUS_LABELS[s.status] ?? s.status);
    this.pill.className = `status-pill ${s.status}`;

    // the labels name the tools a phase called or ran, so tool activity changes them too
    const waiting = s.approvals.filter((a) => a.status === 'pending').map((a) => a.callId);
    const phases = JSON.stringify([s.phases.map((p) => [p.phaseIndex, p.phase, p.ended, p.reason]), s.tools.map((t) => [t.name, t.status, t.phaseIndex]), waiting]);
    if (phases !== this.rendered.phases) {
      this.rendered.phases = phases;
      const current = s.phases.at(-1);
      this.phases.replaceChildren(
        ...s.phases.map((p) =>
          el(
            'li',
            { class: `phase ${p.phase}${p === current && !p.ended ? ' current' : ''}`, 'aria-current': p === current && !p.ended ? 'step' : null, title: p.reason ? `ended: ${p.reason}` : 'running' },
            `${p.phaseIndex} · ${stepLabel(p, s.tools, s.approvals)}`,
          ),
        ),
      );
    }

    const decisions = s.approvals.map((a) => [a.callId, a.status]);
    const tools = JSON.stringify([s.tools.map((t) => [t.callId, t.status, t.detail, t.hasOutput, t.isError, t.outcome, t.errorMessage, t.textOffset]), decisions]);
    // text and tool rows in the order they happened: the text before each call, then its rows
    const flow = turnFlow(s);
    const shape = JSON.stringify([tools, flow.slice(0, -1).map((part) => (part.kind === 'text' ? part.text : part.tools.length))]);
    if (shape !== this.rendered.flow) {
      this.rendered.flow = shape;
      this.rendered.tools = tools;
      const parts = flow.slice(0, -1).map((part) =>
        part.kind === 'text'
          ? el('div', { class: 'markdown text-part' }, [renderMarkdown(part.text)])
          : el('ul', { class: 'tool-activity', 'aria-label': 'Tool activity' }, part.tools.map((t) => toolItem(t, s.approvals))),
      );
      this.flow.replaceChildren(...parts, this.body);
    }

    // cards update in place (a person may be typing in one)
    this.approvals.render(s.approvals);

    if (s.notices.length !== this.rendered.notices) {
      this.rendered.notices = s.notices.length;
      this.notices.replaceChildren(...s.notices.map((n) => el('p', { class: 'notice', 'data-code': n.code }, n.message)));
    }

    const tail = /** @type {{ text: string }} */ (flow.at(-1)).text;
    if (tail !== this.rendered.content) {
      this.rendered.content = tail;
      this.body.replaceChildren(renderMarkdown(tail));
    }
    this.body.setAttribute('aria-busy', String(!isSettled(s.status)));

    // fetch statuses come from the tool activity, so either can change the sources
    if (s.sources !== this.rendered.sources || (s.sources && tools !== this.rendered.sourcesTools)) {
      this.rendered.sources = s.sources;
      this.rendered.sourcesTools = tools;
      const section = s.sources ? renderSources(s.sources, s.tools) : null;
      this.sources.replaceChildren(...(section ? [section] : []));
    }

    this.error.hidden = !s.error;
    this.error.textContent = s.error ? s.error.message || s.error.code : '';
    this.footer.replaceChildren(
      ...[s.stopReason && s.stopReason !== 'final_answer' ? el('span', { class: 'stop-reason' }, `stop reason: ${s.stopReason}`) : null, traceLink(s.requestId)].filter(Boolean),
    );
    if (nearEnd && this.container) scrollToEnd(this.container, false);
  }
}

/** What a call whose approval was decided shows until its own progress says more. */
const DECIDED_LABELS = { approved: 'approved', denied: 'declined', expired: 'declined (no decision in time)', void: 'not run' };

/**
 * One tool's activity. A failed tool (either protocol's failed result, or the unified protocol's
 * `tool_phase` error stage) is an error step: marked as such, with what went wrong. A call that
 * waits for a person says so (not `running`), and once decided says the decision.
 * @param {import('./turn-state.js').ToolActivity} t
 * @param {import('./approval-state.js').Approval[]} approvals
 */
function toolItem(t, approvals) {
  const error = isErrorStep(t);
  const waiting = isWaitingForApproval(t, approvals);
  const decided = waiting || isDecisionOutcome(t.outcome);
  const approval = t.outcome === 'approval_required' && !waiting ? approvals.findLast((a) => a.callId === t.callId) : undefined;
  const label = error
    ? 'error'
    : waiting
      ? 'waiting for approval'
      : approval
        ? DECIDED_LABELS[/** @type {keyof typeof DECIDED_LABELS} */ (approval.status)] ?? outcomeLabel(t.outcome)
        : decided
          ? outcomeLabel(t.outcome)
          : ({ requested: 'requested', calling: 'running', completed: 'done', failed: 'failed', refused: 'refused (duplicate)' }[t.status] ?? t.status);
  return el('li', { class: `tool ${waiting ? 'waiting' : t.status}${error ? ' error-step' : ''}`, 'data-tool': t.name, 'data-step': error ? 'error' : waiting ? 'waiting' : null }, [
    error ? el('span', { class: 'error-icon', 'aria-hidden': 'true' }, '!') : null,
    el('span', { class: 'tool-name' }, t.name),
    el('span', { class: `tool-status ${error ? 'failed' : waiting ? 'waiting' : t.status}` }, error ? 'error' : t.outcome && t.outcome !== 'success' && !decided ? `${label}: ${t.outcome}` : label),
    error ? el('span', { class: 'tool-error' }, t.errorMessage || (t.status === 'refused' ? 'refused: its arguments were not usable' : `${t.name} ${outcomeLabel(t.outcome)}`)) : null,
    // a tool's own progress message ("Searching the knowledge base…") while it runs
    t.detail && !waiting && (t.status === 'calling' || t.status === 'requested') ? el('span', { class: 'tool-detail' }, t.detail) : null,
    t.hasOutput
      ? el('details', { class: 'tool-output' }, [
          el('summary', {}, 'Output'),
          el('pre', {}, (typeof t.output === 'string' ? t.output : JSON.stringify(t.output, null, 2) ?? '').slice(0, 20000)),
        ])
      : null,
  ]);
}

/** @param {string} text */
export function userMessage(text) {
  return el('article', { class: 'message user', 'aria-label': 'You' }, el('p', { class: 'user-text' }, text));
}

/** @param {string | null} requestId */
export function traceLink(requestId) {
  return requestId ? el('a', { class: 'trace-link', href: `/debug?requestId=${encodeURIComponent(requestId)}` }, 'Trace') : null;
}

/** @param {HTMLElement} list */
export function isNearEnd(list) {
  return list.scrollHeight - list.scrollTop - list.clientHeight < 80;
}

/** Keeps the newest text in view unless the reader scrolled up. @param {HTMLElement} list @param {boolean} force */
export function scrollToEnd(list, force) {
  if (force || isNearEnd(list)) list.scrollTop = list.scrollHeight;
}
