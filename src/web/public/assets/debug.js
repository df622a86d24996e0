// The debug panel (issue #7): the two buttons of the tool-only plan (Classic, NarrowTopK) with
// their options and the raw ToolCallsResult, and a trace viewer for one requestId.

import { ApiError, apiJson, getApiKey, setApiKey } from './api.js';
import { byId, el } from './dom.js';
import { waitingCalls, withApprovedCalls } from './tool-only-approvals.js';

const ui = {
  banner: byId('banner'),
  form: /** @type {HTMLFormElement} */ (byId('execute-form')),
  userInput: /** @type {HTMLTextAreaElement} */ (byId('user-input')),
  participants: /** @type {HTMLInputElement} */ (byId('participant-ids')),
  project: /** @type {HTMLInputElement} */ (byId('debug-project')),
  maxCalls: /** @type {HTMLInputElement} */ (byId('max-calls')),
  narrowTopK: /** @type {HTMLInputElement} */ (byId('narrow-top-k')),
  minScore: /** @type {HTMLInputElement} */ (byId('min-score')),
  locale: /** @type {HTMLInputElement} */ (byId('locale')),
  buttons: /** @type {HTMLButtonElement[]} */ ([byId('run-classic'), byId('run-narrow')]),
  openTrace: /** @type {HTMLButtonElement} */ (byId('open-trace')),
  executeMeta: byId('execute-meta'),
  executeJson: byId('execute-json'),
  waiting: byId('waiting'),
  waitingCalls: byId('waiting-calls'),
  runApproved: /** @type {HTMLButtonElement} */ (byId('run-approved')),
  tracePanel: byId('trace-panel'),
  traceForm: /** @type {HTMLFormElement} */ (byId('trace-form')),
  traceId: /** @type {HTMLInputElement} */ (byId('trace-request-id')),
  traceType: /** @type {HTMLInputElement} */ (byId('trace-type')),
  traceLimit: /** @type {HTMLInputElement} */ (byId('trace-limit')),
  traceMeta: byId('trace-meta'),
  traceTable: byId('trace-table'),
  traceRows: byId('trace-rows'),
  runUsage: byId('run-usage'),
  keyForm: byId('api-key-form'),
  key: /** @type {HTMLInputElement} */ (byId('api-key')),
  keyClear: byId('api-key-clear'),
};

/** requestId of the last execution, for "Open its trace" */
let lastRequestId = '';
/** the last request and the calls of its result that wait for approval, for "Run again" */
let last = /** @type {{ body: Record<string, unknown>, waiting: ReturnType<typeof waitingCalls> } | null} */ (null);

ui.key.value = getApiKey();
ui.form.addEventListener('submit', (e) => {
  e.preventDefault();
  const submitter = /** @type {HTMLButtonElement | null} */ (/** @type {SubmitEvent} */ (e).submitter);
  void execute(submitter?.value === 'NarrowTopK' ? 'NarrowTopK' : 'Classic');
});
ui.runApproved.addEventListener('click', () => {
  if (!last) return;
  const checked = [...ui.waitingCalls.querySelectorAll('input[type="checkbox"]:checked')].map((box) => last?.waiting[Number(/** @type {HTMLInputElement} */ (box).value)]);
  const approved = checked.filter((c) => c !== undefined);
  if (approved.length === 0) return;
  void execute(/** @type {'Classic' | 'NarrowTopK'} */ (last.body.mode), withApprovedCalls(last.body, approved));
});
ui.openTrace.addEventListener('click', () => {
  ui.traceId.value = lastRequestId;
  void loadTrace();
  ui.traceId.scrollIntoView({ behavior: 'smooth', block: 'center' });
});
ui.traceForm.addEventListener('submit', (e) => {
  e.preventDefault();
  void loadTrace();
});
ui.keyForm.addEventListener('submit', (e) => {
  e.preventDefault();
  setApiKey(ui.key.value.trim());
  ui.banner.hidden = true;
});
ui.keyClear.addEventListener('click', () => {
  ui.key.value = '';
  setApiKey('');
});

const linked = new URLSearchParams(location.search).get('requestId');
if (linked) {
  // opened for one request (the chat page's Trace link): its trace comes first, in view
  ui.tracePanel.parentElement?.prepend(ui.tracePanel);
  ui.traceId.value = linked;
  void loadTrace();
}
document.documentElement.dataset.ready = 'true';

/**
 * @param {'Classic' | 'NarrowTopK'} mode
 * @param {Record<string, unknown>} [again] a request sent before, with the calls a person approved
 */
async function execute(mode, again) {
  const participantIds = ui.participants.value.split(',').map((s) => s.trim()).filter(Boolean);
  /** @type {Record<string, number | string>} */
  const options = {};
  setNumber(options, 'maxCalls', ui.maxCalls);
  setNumber(options, 'narrowTopK', ui.narrowTopK);
  setNumber(options, 'minScoreThreshold', ui.minScore);
  if (ui.locale.value.trim()) options.locale = ui.locale.value.trim();
  const body = again ?? { userInput: ui.userInput.value, participantIds, projectId: ui.project.value.trim() || 'default', mode, options };

  for (const b of [...ui.buttons, ui.runApproved]) b.disabled = true;
  ui.executeMeta.className = 'result-meta';
  ui.executeMeta.textContent = `Running ${mode}…`;
  ui.openTrace.hidden = true;
  const started = performance.now();
  try {
    const result = await apiJson('/api/orchestration/execute', { method: 'POST', body });
    const ms = Math.round(performance.now() - started);
    ui.executeJson.textContent = JSON.stringify(result, null, 2);
    ui.executeMeta.textContent = `${mode}: ${result?.isSuccess ? 'success' : `not successful (${result?.error ?? 'unknown'})`} · ${ms} ms`;
    lastRequestId = typeof result?.requestId === 'string' ? result.requestId : '';
    ui.openTrace.hidden = !lastRequestId;
    showWaiting(body, waitingCalls(result));
  } catch (err) {
    ui.executeMeta.className = 'result-meta error';
    ui.executeMeta.textContent = failure(err);
    ui.executeJson.textContent = err instanceof ApiError ? JSON.stringify(err.body, null, 2) : '';
    showWaiting(body, []);
  } finally {
    for (const b of [...ui.buttons, ui.runApproved]) b.disabled = false;
  }
}

/**
 * The executions that wait for a person: tool, why, arguments, a box to approve each.
 * @param {Record<string, unknown>} body @param {ReturnType<typeof waitingCalls>} waiting
 */
function showWaiting(body, waiting) {
  last = waiting.length ? { body, waiting } : null;
  ui.waiting.hidden = waiting.length === 0;
  ui.waitingCalls.replaceChildren(
    ...waiting.map((c, i) => {
      const id = `waiting-call-${i}`;
      return el('div', { class: 'approval-card', 'data-testid': 'waiting-call', 'data-status': 'pending', 'data-tool': c.tool }, [
        el('div', { class: 'approval-header' }, [
          el('input', { type: 'checkbox', id, value: String(i), 'data-testid': 'waiting-call-approve' }),
          el('label', { for: id }, [el('span', { class: 'approval-title' }, 'Approve '), el('span', { class: 'approval-tool' }, c.tool)]),
          c.reason ? el('span', { class: 'approval-reason muted small' }, ` (${c.reason})`) : null,
        ]),
        el('pre', { class: 'approval-arguments' }, JSON.stringify(c.arguments, null, 2)),
      ]);
    }),
  );
}

async function loadTrace() {
  const requestId = ui.traceId.value.trim();
  if (!requestId) return ui.traceId.reportValidity();
  const q = new URLSearchParams({ requestId });
  if (ui.traceType.value.trim()) q.set('type', ui.traceType.value.trim());
  if (ui.traceLimit.value) q.set('limit', ui.traceLimit.value);
  ui.traceMeta.className = 'result-meta';
  ui.traceMeta.textContent = 'Loading…';
  try {
    /** @type {{ id: number, type: string, details: unknown, createdAt: string }[]} */
    const events = await apiJson(`/api/trace?${q}`);
    const t0 = events.length ? Date.parse(events[0].createdAt) : 0;
    ui.traceRows.replaceChildren(
      ...events.map((e, i) =>
        el('tr', { 'data-type': e.type }, [
          el('td', {}, String(i + 1)),
          el('td', { class: 'when', title: e.createdAt }, String(Date.parse(e.createdAt) - t0)),
          el('td', { class: 'type' }, e.type),
          el('td', {}, el('pre', {}, JSON.stringify(e.details, null, 2))),
        ]),
      ),
    );
    ui.traceTable.hidden = events.length === 0;
    ui.traceMeta.textContent = events.length ? `${events.length} events` : 'No trace events for this request (yet).';
    history.replaceState(null, '', `${location.pathname}?requestId=${encodeURIComponent(requestId)}`);
    await showRunUsage(requestId, events);
  } catch (err) {
    ui.traceTable.hidden = true;
    ui.traceMeta.className = 'result-meta error';
    ui.traceMeta.textContent = failure(err);
  }
}

/**
 * The turn's usage and cost as the run stores them (GET /api/chat/runs/:requestId), which stay
 * when trace retention has removed the trace; the ending trace record's (run_completed,
 * run_cancelled, run_failed) when there is no run row. A tool-only request has neither: the
 * line stays hidden.
 * @param {string} requestId
 * @param {{ type: string, details: any }[]} events
 */
async function showRunUsage(requestId, events) {
  const ending = events.find((e) => e.type === 'run_completed' || e.type === 'run_cancelled' || e.type === 'run_failed');
  /** @type {any} */
  let u = ending?.details?.usage;
  // a chat run (a run_* record, or a trace already removed by retention) has a run row; a tool-only request has none
  if (events.length === 0 || events.some((e) => e.type.startsWith('run_'))) {
    try {
      u = (await apiJson(`/api/chat/runs/${encodeURIComponent(requestId)}`)).usage ?? u;
    } catch {
      // no run row (removed by retention, or never a chat run): the trace's figures, if any
    }
  }
  ui.runUsage.hidden = !u || typeof u.totalTokens !== 'number';
  if (ui.runUsage.hidden) return;
  const parts = [`Usage: ${u.totalTokens} tokens (prompt ${u.promptTokens}, completion ${u.completionTokens}) in ${u.llmCalls} model calls`];
  if (typeof u.cachedTokens === 'number') parts.push(`${u.cachedTokens} cached`);
  if (typeof u.reasoningTokens === 'number') parts.push(`${u.reasoningTokens} reasoning`);
  if (u.estimated === true) parts.push('estimated');
  parts.push(typeof u.cost === 'number' ? `cost ${u.cost}` : 'no price for this model');
  ui.runUsage.textContent = parts.join(' · ');
}

/** @param {Record<string, number | string>} options @param {string} name @param {HTMLInputElement} input */
function setNumber(options, name, input) {
  if (input.value !== '' && Number.isFinite(Number(input.value))) options[name] = Number(input.value);
}

/** @param {unknown} err */
function failure(err) {
  if (err instanceof ApiError && err.status === 401) {
    ui.banner.textContent = 'This server needs an API key: paste it under "API key" at the bottom.';
    ui.banner.hidden = false;
  }
  return err instanceof ApiError ? `HTTP ${err.status} ${err.code}: ${err.message}` : `Network error: ${err instanceof Error ? err.message : String(err)}`;
}
