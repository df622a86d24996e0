// Drives one chat turn over the network: the POST stream that starts it, automatic reconnects
// through the events route when a connection drops, and the Stop / Pause / Resume controls.
// Every event goes through applyEvent (turn-state.js), which drops anything already seen.

import { ApiError, apiJson, openSse, readSse } from './api.js';
import { approvalFromRow, approvalRefused, approvalSending, canDecide, decisionBody, findApproval } from './approval-state.js';
import { applyEvent, createTurnState, isSettled, isTerminal, liveStatus } from './turn-state.js';

/**
 * Waits between reconnect attempts (ms): quick at first (a blip), then every 3 s. An `online`
 * event from the browser cuts the wait short.
 */
export const RECONNECT_DELAYS_MS = [200, 400, 800, 1600, 3000];
/** attempts without a single new event before the page gives up and offers a manual retry (~2 min) */
export const MAX_RECONNECT_ATTEMPTS = 40;

/** `error.code` of the page's own connection problems, cleared once a connection works again */
const CONNECTION_LOST = 'connection_lost';

/** Why a connection was closed on purpose (anything else that ends one is a drop). */
const CLOSED = Object.freeze({ settled: 'settled', detached: 'detached', dropped: 'dropped' });

/** @typedef {import('./turn-state.js').TurnState} TurnState */

export class TurnRunner {
  /**
   * @param {{ onChange: (s: TurnState) => void, onSettled?: (s: TurnState) => void,
   *           state?: Partial<TurnState> }} opts
   */
  constructor(opts) {
    this.state = createTurnState(opts.state);
    this.onChange = opts.onChange;
    this.onSettled = opts.onSettled ?? (() => undefined);
    /** @type {AbortController | null} */
    this.conn = null;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    this.detached = false;
    /** ends the wait before a reconnect attempt early (the browser came online, or detach) @type {(() => void) | null} */
    this.wake = null;
  }

  /** Starts the turn: POST to the chat route, read its stream. */
  send(/** @type {string} */ route, /** @type {unknown} */ body) {
    this.state.status = 'connecting';
    this.changed();
    void this.open('post', (signal) => openSse(route, { method: 'POST', body, signal }));
  }

  /** Follows a run that is already going (page reloaded, conversation reopened). */
  follow(/** @type {string} */ requestId) {
    this.state.requestId = requestId;
    this.state.status = 'reconnecting';
    this.changed();
    void this.open('events', (signal) => this.eventsStream(signal));
  }

  /** Asks the server to cancel. The stream then ends with done{stopReason:"cancelled"}. */
  async stop() {
    const s = this.state;
    if (isTerminal(s.status) || s.intent === 'stop') return;
    const before = s.status;
    s.intent = 'stop';
    if (before !== 'reconnecting') s.status = 'stopping';
    this.changed();
    if (!s.requestId) return; // sent as soon as `start` names the run
    try {
      await apiJson(`/api/chat/runs/${encodeURIComponent(s.requestId)}/cancel`, { method: 'POST' });
      // no stream is open to say so
      if (before === 'paused' || before === 'disconnected') this.finish('stopped', 'cancelled');
    } catch (err) {
      await this.controlFailed('stop', err, before);
    }
  }

  /** Asks the server to pause at its next natural pause point; the stream then ends with `paused`. */
  async pause() {
    const s = this.state;
    if (isSettled(s.status) || s.intent) return;
    const before = s.status;
    s.intent = 'pause';
    if (before !== 'reconnecting') s.status = 'pausing';
    this.changed();
    if (!s.requestId) return;
    try {
      await apiJson(`/api/chat/runs/${encodeURIComponent(s.requestId)}/pause`, { method: 'POST' });
    } catch (err) {
      await this.controlFailed('pause', err, before);
    }
  }

  /** Continues a paused run from its checkpoint; the new stream carries on with the next seq. */
  resume() {
    const s = this.state;
    if (s.status !== 'paused' || !s.requestId) return;
    s.status = 'resuming';
    s.error = null;
    this.changed();
    const body = { requestId: s.requestId, resumeFromPhaseIndex: s.resumeFromPhaseIndex ?? s.phaseIndex };
    void this.open('resume', (signal) => openSse('/api/chat/messages_two_stage/resume', { method: 'POST', body, signal }));
  }

  /**
   * Sends a person's decision on one of the turn's approvals. The card shows the stored approval
   * the server answers; the run's `approval_decided` event follows on the stream. A refusal
   * leaves the card waiting, with the server's message (a 400 says what is wrong with edited
   * arguments); a 409 (decided elsewhere, expired, or the run stopped waiting) shows what is stored.
   * @param {string} approvalId @param {'approve' | 'deny'} decision
   * @param {{ reason?: string, arguments?: Record<string, unknown> }} [extra]
   */
  async decide(approvalId, decision, extra = {}) {
    const s = this.state;
    const a = findApproval(s, approvalId);
    if (!s.requestId || !a || !canDecide(a)) return;
    approvalSending(s, approvalId);
    this.changed();
    const path = `/api/chat/runs/${encodeURIComponent(s.requestId)}/approvals/${encodeURIComponent(approvalId)}`;
    try {
      approvalFromRow(s, await apiJson(path, { method: 'POST', body: decisionBody(decision, extra) }));
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) await this.refreshApprovals();
      approvalRefused(s, approvalId, err instanceof ApiError ? `Not sent: ${err.message}` : `Not sent (network): ${err instanceof Error ? err.message : String(err)}`);
    }
    this.changed();
  }

  /** Reads the run's approvals as stored (after a 409, the truth about who decided). */
  async refreshApprovals() {
    const s = this.state;
    if (!s.requestId) return;
    try {
      const rows = await apiJson(`/api/chat/runs/${encodeURIComponent(s.requestId)}/approvals`);
      for (const row of Array.isArray(rows) ? rows : []) approvalFromRow(s, row);
    } catch {
      // the refusal's message still says why
    }
  }

  /** Tries again after the page gave up reconnecting. */
  retry() {
    if (this.state.status !== 'disconnected') return;
    this.state.reconnectAttempts = 0;
    void this.reconnect();
  }

  /** Test and debug hook: drops the open connection as a network failure would. */
  drop() {
    this.conn?.abort(CLOSED.dropped);
  }

  /** Stops listening (the conversation was left or the page is going away); the run goes on. */
  detach() {
    this.detached = true;
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
    this.conn?.abort(CLOSED.detached);
  }

  /** @param {AbortSignal} signal */
  eventsStream(signal) {
    const { requestId, lastSeq } = this.state;
    const path = `/api/chat/runs/${encodeURIComponent(/** @type {string} */ (requestId))}/events?lastEventId=${lastSeq}`;
    return openSse(path, { headers: { 'Last-Event-ID': String(lastSeq) }, signal });
  }

  /**
   * Opens one stream and reads it to its end. A stream that ends or breaks before the turn
   * settled (done, paused) is a drop: reconnect.
   * @param {'post' | 'resume' | 'events'} kind
   * @param {(signal: AbortSignal) => Promise<Response>} connect
   */
  async open(kind, connect) {
    if (this.detached) return;
    const ctrl = new AbortController();
    this.conn = ctrl;
    try {
      const res = await connect(ctrl.signal);
      if (kind === 'events' && !isSettled(this.state.status)) {
        this.state.status = liveStatus(this.state);
        if (this.state.error?.code === CONNECTION_LOST) this.state.error = null;
        this.changed();
      }
      await readSse(res, (m) => this.onMessage(m, ctrl));
    } catch (err) {
      if (err instanceof ApiError) return this.refused(kind, err);
      // aborted on purpose, or a network failure: decided below
    } finally {
      if (this.conn === ctrl) this.conn = null;
    }
    const reason = ctrl.signal.aborted ? ctrl.signal.reason : null;
    if (this.detached || reason === CLOSED.settled || isSettled(this.state.status)) return;
    await this.reconnect();
  }

  /** @param {{ event: string, data: string }} m @param {AbortController} ctrl */
  onMessage(m, ctrl) {
    let data;
    try {
      data = JSON.parse(m.data);
    } catch {
      return; // not ours
    }
    const before = this.state.requestId;
    if (!applyEvent(this.state, m.event, data)) return;
    this.state.reconnectAttempts = 0;
    if (!before && this.state.requestId && this.state.intent) void this.sendPendingIntent();
    this.changed();
    if (isSettled(this.state.status)) {
      ctrl.abort(CLOSED.settled);
      this.onSettled(this.state);
    }
  }

  /** Stop or Pause pressed before the server named the run. */
  async sendPendingIntent() {
    const intent = this.state.intent;
    this.state.intent = null;
    if (intent === 'stop') await this.stop();
    else if (intent === 'pause') await this.pause();
  }

  /** Waits, then reopens the run's stream from the last seq seen. */
  async reconnect() {
    const s = this.state;
    if (!s.requestId) {
      s.error = { code: CONNECTION_LOST, message: 'The connection dropped before the server named the run; the answer may still appear in this conversation later.' };
      return this.finish('failed', null);
    }
    s.reconnectAttempts++;
    if (s.reconnectAttempts > MAX_RECONNECT_ATTEMPTS) {
      s.status = 'disconnected';
      s.error = { code: CONNECTION_LOST, message: 'The connection is lost. Retry when the network is back.' };
      return this.changed();
    }
    s.status = 'reconnecting';
    this.changed();
    const delay = RECONNECT_DELAYS_MS[Math.min(s.reconnectAttempts - 1, RECONNECT_DELAYS_MS.length - 1)];
    await this.pauseBeforeRetry(delay);
    if (this.detached) return;
    await this.open('events', (signal) => this.eventsStream(signal));
  }

  /** Resolves after `ms`, or as soon as the browser says it is back online. @param {number} ms */
  pauseBeforeRetry(ms) {
    return new Promise((resolve) => {
      const done = () => {
        if (this.timer) clearTimeout(this.timer);
        window.removeEventListener('online', done);
        this.wake = null;
        resolve(undefined);
      };
      this.wake = done;
      this.timer = setTimeout(done, ms);
      window.addEventListener('online', done);
    });
  }

  /**
   * A stream that the server refused before it started.
   * @param {'post' | 'resume' | 'events'} kind @param {ApiError} err
   */
  async refused(kind, err) {
    const s = this.state;
    const error = { code: err.code, message: err.message };
    if (kind === 'post') {
      s.error = error;
      return this.finish('failed', null);
    }
    if (kind === 'resume') {
      if (err.code === 'run_cancelled') {
        // stopped elsewhere (another tab, another client) while it was paused: a cancel is
        // final, so this turn is over and offers no Resume
        s.error = { ...error, message: 'This run was cancelled while it was paused, so it cannot be resumed.' };
        return this.finish('stopped', 'cancelled');
      }
      s.error = { ...error, message: `Could not resume: ${err.message}` };
      s.status = 'paused';
      return this.changed();
    }
    // events route: a refusal (no key, unknown run) will not fix itself; a 5xx may (a restart, a deploy)
    if (err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429) {
      s.error = { code: CONNECTION_LOST, message: `Could not reconnect: ${err.message}` };
      s.status = 'disconnected';
      return this.changed();
    }
    return this.reconnect();
  }

  /**
   * Cancel or pause was refused: put the turn back as it was and say why.
   * @param {'stop' | 'pause'} what @param {unknown} err @param {string} before the status when it was asked
   */
  async controlFailed(what, err, before) {
    const s = this.state;
    s.intent = null;
    if (err instanceof ApiError && err.status === 409 && s.requestId && !this.conn) {
      // the run already ended and no stream will say how: take its stored status
      try {
        const run = await apiJson(`/api/chat/runs/${encodeURIComponent(s.requestId)}`);
        if (run.status === 'cancelled') return this.finish('stopped', 'cancelled');
      } catch {
        // fall through to the message
      }
    }
    s.error = { code: err instanceof ApiError ? err.code : 'network_error', message: `Could not ${what}: ${err instanceof Error ? err.message : String(err)}` };
    if (!isSettled(s.status) && s.status !== 'reconnecting') s.status = before === 'paused' ? 'paused' : liveStatus(s);
    this.changed();
  }

  /** @param {'stopped' | 'failed' | 'done'} status @param {string | null} stopReason */
  finish(status, stopReason) {
    this.state.status = status;
    this.state.intent = null;
    if (stopReason) this.state.stopReason = stopReason;
    this.changed();
    this.onSettled(this.state);
  }

  changed() {
    this.onChange(this.state);
  }
}
