// The chat page (issue #7): conversations, the composer, a streaming turn with its phases and
// tool activity, Stop / Pause / Resume, automatic reconnect, sources and the agentic switch.
// State lives in TurnRunner (network) and turn-state.js (events); this file only draws.

import { ApiError, apiJson, getApiKey, setApiKey } from './api.js';
import { confirmDelete, deleteConversation, renameForm } from './conversation-actions.js';
import { byId, el, formatWhen, icon } from './dom.js';
import { isTerminal, phaseLabel, STATUS_LABELS } from './turn-state.js';
import { TurnRunner } from './turn-runner.js';
import { pendingApprovals } from './approval-state.js';
import { scrollToEnd, TurnView, userMessage } from './turn-view.js';

const PREFS_STORAGE = 'orion.chat.prefs';
const ROUTES = { 'two-stage': '/api/chat/messages_two_stage', unified: '/api/chat/messages' };

/** @typedef {{ id: string, title: string, updatedAt: string, settings: Record<string, unknown> }} Conversation */

const ui = {
  banner: byId('banner'),
  sidebar: byId('sidebar'),
  toggleSidebar: byId('toggle-sidebar'),
  modelBadge: byId('model-badge'),
  newConversation: byId('new-conversation'),
  list: byId('conversation-list'),
  listEmpty: byId('conversation-empty'),
  settings: /** @type {HTMLDetailsElement} */ (byId('settings')),
  projectId: /** @type {HTMLInputElement} */ (byId('project-id')),
  route: /** @type {HTMLSelectElement} */ (byId('route')),
  routeHint: byId('route-hint'),
  mode: /** @type {HTMLSelectElement} */ (byId('mode')),
  showToolOutputs: /** @type {HTMLInputElement} */ (byId('show-tool-outputs')),
  apiKeyForm: byId('api-key-form'),
  apiKey: /** @type {HTMLInputElement} */ (byId('api-key')),
  apiKeyClear: byId('api-key-clear'),
  title: byId('conversation-title'),
  agentic: /** @type {HTMLInputElement} */ (byId('agentic')),
  agenticHint: byId('agentic-hint'),
  messages: byId('messages'),
  emptyState: byId('empty-state'),
  status: byId('turn-status'),
  composer: /** @type {HTMLFormElement} */ (byId('composer')),
  input: /** @type {HTMLTextAreaElement} */ (byId('message')),
  send: /** @type {HTMLButtonElement} */ (byId('send')),
  pause: /** @type {HTMLButtonElement} */ (byId('pause')),
  resume: /** @type {HTMLButtonElement} */ (byId('resume')),
  reconnect: /** @type {HTMLButtonElement} */ (byId('reconnect')),
  stop: /** @type {HTMLButtonElement} */ (byId('stop')),
};

const app = {
  /** @type {{ provider: string, model: string, toolCalling: boolean, orchestratorEnabled: boolean, twoStageEnabled: boolean } | null} */
  caps: null,
  /** why `caps` is null: 'key' (the server wants an API key), 'error' (any other failure) @type {'key' | 'error' | null} */
  capsProblem: null,
  /** @type {Conversation[]} */
  conversations: [],
  /** @type {Conversation | null} null: a new conversation, created by its first message */
  conversation: null,
  /** @type {TurnRunner | null} */
  runner: null,
  /** @type {string | null} the conversation whose title is being edited in the list */
  renaming: null,
  prefs: loadPrefs(),
};

// ---------------------------------------------------------------- start-up

init().catch((err) => showBanner(`The page could not start: ${err instanceof Error ? err.message : String(err)}`));

async function init() {
  ui.projectId.value = app.prefs.projectId;
  ui.mode.value = app.prefs.mode;
  ui.showToolOutputs.checked = app.prefs.showToolOutputs;
  ui.apiKey.value = getApiKey();
  wireControls();
  await loadCapabilities();
  await loadConversations();
  const wanted = new URLSearchParams(location.search).get('c');
  const found = wanted ? app.conversations.find((c) => c.id === wanted) : undefined;
  if (found) await openConversation(found);
  else showNewConversation();
  document.documentElement.dataset.ready = 'true';
}

function wireControls() {
  ui.composer.addEventListener('submit', (e) => {
    e.preventDefault();
    void sendMessage();
  });
  ui.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      ui.composer.requestSubmit();
    }
  });
  ui.stop.addEventListener('click', () => void app.runner?.stop());
  ui.pause.addEventListener('click', () => void app.runner?.pause());
  ui.resume.addEventListener('click', () => app.runner?.resume());
  ui.reconnect.addEventListener('click', () => app.runner?.retry());
  ui.newConversation.addEventListener('click', () => {
    leaveTurn();
    showNewConversation();
    closeSidebarOnNarrow();
    ui.input.focus();
  });
  ui.toggleSidebar.addEventListener('click', () => {
    const open = ui.sidebar.classList.toggle('open');
    ui.toggleSidebar.setAttribute('aria-expanded', String(open));
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && ui.sidebar.classList.contains('open')) {
      closeSidebarOnNarrow();
      ui.toggleSidebar.focus();
    }
  });
  ui.projectId.addEventListener('change', () => {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(ui.projectId.value)) return ui.projectId.reportValidity();
    savePrefs({ projectId: ui.projectId.value });
    leaveTurn();
    showNewConversation();
    void loadConversations();
  });
  ui.route.addEventListener('change', () => {
    savePrefs({ route: ui.route.value });
    renderRouteHint();
  });
  ui.mode.addEventListener('change', () => savePrefs({ mode: ui.mode.value }));
  ui.showToolOutputs.addEventListener('change', () => savePrefs({ showToolOutputs: ui.showToolOutputs.checked }));
  ui.apiKeyForm.addEventListener('submit', (e) => {
    e.preventDefault();
    setApiKey(ui.apiKey.value.trim());
    hideBanner();
    void reloadAll().then(() => {
      // the key works: back to the conversation (the list covers it on a narrow screen)
      if (app.caps) closeSidebarOnNarrow();
    });
  });
  ui.apiKeyClear.addEventListener('click', () => {
    ui.apiKey.value = '';
    setApiKey('');
    void reloadAll();
  });
  ui.agentic.addEventListener('change', () => void saveAgentic(ui.agentic.checked));
  // the run goes on server-side (the page sends detach); reopening the conversation follows it again
  window.addEventListener('pagehide', () => app.runner?.detach());
  window.__orion = {
    dropConnection: () => app.runner?.drop(),
    state: () => (app.runner ? structuredClone(app.runner.state) : null),
  };
}

async function reloadAll() {
  await loadCapabilities();
  await loadConversations();
}

// ---------------------------------------------------------------- capabilities, route, agentic switch

async function loadCapabilities() {
  app.capsProblem = null;
  try {
    app.caps = await apiJson('/api/config/capabilities');
  } catch (err) {
    reportError(err, 'Could not read the server capabilities');
    app.caps = null;
    // a 401 says nothing about the server's routes: it is read again once the key is saved
    app.capsProblem = err instanceof ApiError && err.status === 401 ? 'key' : 'error';
  }
  const c = app.caps;
  ui.modelBadge.textContent = c ? `${c.provider} · ${c.model}` : app.capsProblem === 'key' ? 'API key needed' : 'model unknown';
  const twoStage = /** @type {HTMLOptionElement} */ (ui.route.querySelector('option[value="two-stage"]'));
  // only a server that answered can say two-stage is off
  twoStage.disabled = !!c && !c.twoStageEnabled;
  ui.route.disabled = app.capsProblem === 'key';
  ui.route.value = chosenRoute();
  renderRouteHint();
  renderAgentic();
}

/** The two-stage route when the server enables it, unless the user picked the unified one. */
function chosenRoute() {
  if (!app.caps?.twoStageEnabled) return 'unified';
  return app.prefs.route === 'unified' ? 'unified' : 'two-stage';
}

function renderRouteHint() {
  ui.routeHint.textContent = routeHint();
}

function routeHint() {
  if (app.capsProblem === 'key') return 'Enter your API key (below) to see which routes this server offers.';
  if (!app.caps) return 'The server capabilities could not be read: messages use the unified route.';
  if (!app.caps.twoStageEnabled) return 'Two-stage is off on this server (TWO_STAGE_ENABLED=false): messages use the unified route.';
  return chosenRoute() === 'two-stage' ? 'One tool per phase; Pause and Resume work at tool boundaries.' : 'The agentic loop; the Agentic mode switch applies to it.';
}

function renderAgentic() {
  const c = app.caps;
  const conv = app.conversation;
  const stored = conv?.settings?.orchestratorEnabled;
  ui.agentic.checked = c?.toolCalling !== false && (typeof stored === 'boolean' ? stored : (c?.orchestratorEnabled ?? true));
  if (!c) {
    ui.agentic.disabled = true;
    ui.agenticHint.textContent = app.capsProblem === 'key' ? 'Unknown until the API key is entered.' : 'Unknown until the server answers.';
  } else if (!c.toolCalling) {
    ui.agentic.disabled = true;
    ui.agenticHint.textContent = `Unavailable: the model ${c.model} cannot call tools.`;
  } else if (!conv) {
    ui.agentic.disabled = true;
    ui.agenticHint.textContent = `New conversations start ${c.orchestratorEnabled ? 'on' : 'off'} (server default); switch after the first message.`;
  } else {
    ui.agentic.disabled = false;
    ui.agenticHint.textContent = typeof stored === 'boolean' ? 'Set for this conversation.' : `Server default (${c.orchestratorEnabled ? 'on' : 'off'}).`;
  }
}

/** @param {boolean} enabled */
async function saveAgentic(enabled) {
  const conv = app.conversation;
  if (!conv) return;
  ui.agentic.disabled = true;
  try {
    const updated = await apiJson(`/api/chat/conversations/${conv.id}/settings`, { method: 'PATCH', body: { orchestratorEnabled: enabled } });
    conv.settings = updated?.settings ?? { ...conv.settings, orchestratorEnabled: enabled };
  } catch (err) {
    reportError(err, 'Could not change Agentic mode');
  }
  renderAgentic();
}

// ---------------------------------------------------------------- conversations

async function loadConversations() {
  try {
    app.conversations = await apiJson(`/api/chat/conversations?projectId=${encodeURIComponent(app.prefs.projectId)}`);
  } catch (err) {
    reportError(err, 'Could not list the conversations');
    app.conversations = [];
  }
  renderConversationList();
}

function renderConversationList() {
  ui.list.replaceChildren(
    ...app.conversations.map((c) => {
      const current = c.id === app.conversation?.id;
      // the whole title on hover: a long one is cut after two lines
      const button = el('button', { type: 'button', class: 'conversation', title: c.title || 'Untitled', 'aria-current': current ? 'true' : null }, [
        el('span', { class: 'conversation-title' }, c.title || 'Untitled'),
        el('time', { class: 'conversation-when', datetime: c.updatedAt }, formatWhen(c.updatedAt)),
      ]);
      button.addEventListener('click', () => {
        leaveTurn();
        void openConversation(c);
        closeSidebarOnNarrow();
      });
      if (app.renaming === c.id) return el('li', {}, renameForm(c, { onRenamed: renamed, onCancel: () => stopRenaming(), onError: (err) => reportError(err, 'Could not rename') }));
      const name = c.title || 'Untitled';
      const rename = el('button', { type: 'button', class: 'conversation-action', 'aria-label': `Rename ${name}`, title: 'Rename' }, icon('pencil'));
      rename.addEventListener('click', () => {
        app.renaming = c.id;
        renderConversationList();
      });
      const remove = el('button', { type: 'button', class: 'conversation-action danger', 'aria-label': `Delete ${name}`, title: 'Delete' }, icon('trash'));
      remove.addEventListener('click', () => void removeConversation(c));
      return el('li', { class: 'conversation-item' }, [button, rename, remove]);
    }),
  );
  ui.listEmpty.hidden = app.conversations.length > 0;
}

/** @param {Conversation} updated */
function renamed(updated) {
  app.conversations = app.conversations.map((c) => (c.id === updated.id ? { ...c, title: updated.title } : c));
  if (app.conversation?.id === updated.id) {
    app.conversation = { ...app.conversation, title: updated.title };
    ui.title.textContent = updated.title;
  }
  stopRenaming();
}

function stopRenaming() {
  app.renaming = null;
  renderConversationList();
}

/** @param {Conversation} conv */
async function removeConversation(conv) {
  if (!confirmDelete(conv)) return;
  // stop showing its turn first; deleteConversation stops the run itself on the server
  if (app.conversation?.id === conv.id) {
    leaveTurn();
    showNewConversation();
  }
  try {
    await deleteConversation(conv);
  } catch (err) {
    reportError(err, 'Could not delete the conversation');
  }
  await loadConversations();
}

function showNewConversation() {
  app.conversation = null;
  ui.title.textContent = 'New conversation';
  ui.messages.replaceChildren(ui.emptyState);
  ui.emptyState.hidden = false;
  history.replaceState(null, '', location.pathname);
  renderConversationList();
  renderAgentic();
  renderControls();
}

/** @param {Conversation} conv */
async function openConversation(conv) {
  app.conversation = conv;
  ui.title.textContent = conv.title || 'Untitled';
  history.replaceState(null, '', `${location.pathname}?c=${encodeURIComponent(conv.id)}`);
  renderConversationList();
  renderAgentic();
  /** @type {{ id: string, role: string, content: string, status: string, requestId: string | null }[]} */
  let messages = [];
  try {
    messages = await apiJson(`/api/chat/conversations/${conv.id}/messages`);
  } catch (err) {
    reportError(err, 'Could not load the messages');
  }
  if (app.conversation !== conv) return; // another one was opened meanwhile
  ui.emptyState.hidden = messages.length > 0;
  const stored = messages.map((m) => (m.role === 'user' ? { node: userMessage(m.content), view: null } : storedTurn(m)));
  ui.messages.replaceChildren(ui.emptyState, ...stored.map((x) => x.node));
  scrollToEnd(ui.messages, true);
  renderControls();
  void loadStoredApprovals(conv, stored.flatMap((x) => (x.view ? [x.view] : [])));
  await followUnfinishedRun(conv, messages);
}

/** @param {Parameters<typeof TurnView.stored>[0]} m */
function storedTurn(m) {
  const view = TurnView.stored(m);
  return { node: view.article, view };
}

/** Stored turns whose approvals are read back: the newest ones that called a tool (only they can have any). */
const STORED_APPROVAL_TURNS = 20;

/**
 * A reloaded conversation shows who decided each approval. A turn stored with its approval
 * steps already has them; for a turn that called tools but has none (stored before the server
 * kept approvals with the answer) they are read from the approvals route, for the newest such
 * turns (one request each, in parallel). A server without the route (404) or a failure leaves
 * the turns as they are.
 * @param {Conversation} conv @param {TurnView[]} views
 */
async function loadStoredApprovals(conv, views) {
  const wanted = views.filter((v) => v.state?.requestId && v.state.tools.length > 0 && v.state.approvals.length === 0).slice(-STORED_APPROVAL_TURNS);
  await Promise.all(
    wanted.map(async (view) => {
      try {
        const rows = await apiJson(`/api/chat/runs/${encodeURIComponent(/** @type {string} */ (view.state?.requestId))}/approvals`);
        if (app.conversation === conv) view.showApprovals(rows);
      } catch {
        // no approvals to show
      }
    }),
  );
}

/** Runs a reopened conversation follows: still going, paused, or waiting for a person's approval (its cards come back from the replayed events). */
const FOLLOWED_RUN_STATUSES = new Set(['running', 'paused', 'awaiting_approval']);

/**
 * A turn still running (or paused) when the conversation is opened — the page was reloaded
 * mid-turn — is followed again through the events route, from its first event.
 * @param {Conversation} conv @param {{ role: string, requestId: string | null }[]} messages
 */
async function followUnfinishedRun(conv, messages) {
  const last = messages.at(-1);
  if (!last || last.role !== 'user' || !last.requestId) return;
  let run;
  try {
    run = await apiJson(`/api/chat/runs/${last.requestId}`);
  } catch {
    return;
  }
  if (app.conversation !== conv || app.runner || !FOLLOWED_RUN_STATUSES.has(run.status)) return;
  startRunner(new TurnView(ui.messages, null), { requestId: last.requestId, conversationId: conv.id, protocol: run.protocol }).follow(last.requestId);
}

// ---------------------------------------------------------------- sending and the live turn

async function sendMessage() {
  const content = ui.input.value.trim();
  if (!content || (app.runner && !isTerminal(app.runner.state.status))) return;
  ui.input.value = '';
  ui.emptyState.hidden = true;
  const view = new TurnView(ui.messages, content);
  const route = chosenRoute();
  const body = {
    projectId: app.prefs.projectId,
    ...(app.conversation ? { conversationId: app.conversation.id } : {}),
    content,
    mode: app.prefs.mode,
    // detach: a dropped connection must not cancel the run; the page reconnects through the events route
    // enqueue: a message sent while this conversation's previous reply is still being written
    // (another tab) waits for it and then runs, instead of being refused
    options: { debugShowToolResults: app.prefs.showToolOutputs, detach: true, multitask: 'enqueue' },
  };
  startRunner(view, {}).send(ROUTES[route], body);
}

/**
 * @param {TurnView} view @param {Partial<import('./turn-state.js').TurnState>} state
 */
function startRunner(view, state) {
  leaveTurn();
  const runner = new TurnRunner({
    state,
    onChange: (s) => {
      if (app.runner !== runner) return;
      if (s.conversationId && !app.conversation) adoptNewConversation(s.conversationId);
      view.update(s);
      renderControls();
    },
    onSettled: () => {
      if (app.runner === runner) void loadConversations();
    },
  });
  view.onDecide = (approvalId, decision, extra) => void runner.decide(approvalId, decision, extra);
  app.runner = runner;
  renderControls();
  return runner;
}

/** The first message created the conversation: select it, so the next message continues it. */
function adoptNewConversation(/** @type {string} */ id) {
  const title = ui.messages.querySelector('.message.user .user-text')?.textContent ?? '';
  app.conversation = { id, title: title.slice(0, 80), updatedAt: new Date().toISOString(), settings: {} };
  ui.title.textContent = app.conversation.title;
  history.replaceState(null, '', `${location.pathname}?c=${encodeURIComponent(id)}`);
  renderAgentic();
  void loadConversations();
}

/** Stops listening to the current turn (it goes on server-side). */
function leaveTurn() {
  app.runner?.detach();
  app.runner = null;
  renderControls();
}

function renderControls() {
  const s = app.runner?.state;
  const status = s?.status;
  const active = !!s && !isTerminal(status ?? 'done');
  ui.send.disabled = active;
  ui.stop.hidden = !active;
  ui.stop.disabled = status === 'stopping';
  // only two-stage runs stop at pause points (and only they can be resumed)
  ui.pause.hidden = !active || s?.protocol !== 'two-stage' || status === 'paused' || status === 'resuming';
  ui.pause.disabled = status !== 'streaming';
  ui.pause.textContent = status === 'pausing' ? 'Pausing…' : 'Pause';
  ui.resume.hidden = status !== 'paused';
  ui.reconnect.hidden = status !== 'disconnected';
  ui.status.textContent = s ? statusLine(s) : '';
  ui.status.dataset.status = status ?? '';
}

/** @param {import('./turn-state.js').TurnState} s */
function statusLine(s) {
  const label = STATUS_LABELS[s.status] ?? s.status;
  if (s.status === 'reconnecting') return `Connection lost — reconnecting (attempt ${Math.max(1, s.reconnectAttempts)})…`;
  if (s.status === 'queued') return `Queued (position ${s.queuePosition ?? 1}): waits for the reply being written in this conversation. Stop takes it out.`;
  if (s.status === 'paused') return `Paused after phase ${s.resumeFromPhaseIndex ?? s.phaseIndex}. Resume to continue, or Stop.`;
  const waiting = isTerminal(s.status) ? [] : pendingApprovals(s);
  if (waiting.length > 0) return `Waiting for your approval: ${[...new Set(waiting.map((a) => a.tool))].join(', ')}`;
  if (isTerminal(s.status) || s.status === 'disconnected' || !s.phaseIndex) return label;
  const cycle = s.cycleIndex ? ` · tool cycle ${s.cycleIndex}` : '';
  return `${label} · phase ${s.phaseIndex}: ${phaseLabel(s.phase)}${cycle}`;
}

// ---------------------------------------------------------------- small helpers

function closeSidebarOnNarrow() {
  ui.sidebar.classList.remove('open');
  ui.toggleSidebar.setAttribute('aria-expanded', 'false');
}

/** @param {unknown} err @param {string} what */
function reportError(err, what) {
  if (err instanceof ApiError && err.status === 401) {
    // the list opens only on request: on a narrow screen it would cover the composer
    const enter = el('button', { type: 'button', class: 'button' }, 'Enter API key');
    enter.addEventListener('click', showKeyField);
    showBanner('This server needs an API key: paste it under Settings → API key.', enter);
    ui.settings.open = true;
    return;
  }
  showBanner(`${what}: ${err instanceof Error ? err.message : String(err)}`);
}

/** Opens the settings where the key goes (the conversation list, on a narrow screen) and focuses the field. */
function showKeyField() {
  ui.sidebar.classList.add('open');
  ui.toggleSidebar.setAttribute('aria-expanded', 'true');
  ui.settings.open = true;
  ui.apiKey.scrollIntoView({ block: 'nearest' });
  ui.apiKey.focus();
}

/** @param {string} text @param {HTMLElement} [action] a button placed after the text */
function showBanner(text, action) {
  ui.banner.replaceChildren(el('span', { class: 'banner-text' }, text), ...(action ? [action] : []));
  ui.banner.hidden = false;
}

function hideBanner() {
  ui.banner.hidden = true;
}

function loadPrefs() {
  const defaults = { projectId: 'default', route: '', mode: 'act', showToolOutputs: false };
  try {
    return { ...defaults, ...JSON.parse(localStorage.getItem(PREFS_STORAGE) ?? '{}') };
  } catch {
    return defaults;
  }
}

/** @param {Partial<typeof app.prefs>} patch */
function savePrefs(patch) {
  Object.assign(app.prefs, patch);
  try {
    localStorage.setItem(PREFS_STORAGE, JSON.stringify(app.prefs));
  } catch {
    // storage disabled: prefs last for this page only
  }
}
