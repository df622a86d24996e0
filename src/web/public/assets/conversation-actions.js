// Renaming and deleting a conversation from the list. Rename edits the title in place; delete
// asks first, and when a turn of the conversation is still running (here or in another tab)
// stops it, waits for it to end, then deletes — the server refuses to delete under a running run.

import { ApiError, apiJson } from './api.js';
import { el } from './dom.js';

/** the server's limit (PATCH /api/chat/conversations/:id) */
const TITLE_MAX_LENGTH = 120;
/** how long a delete waits for a stopped run to end */
const STOP_WAIT_MS = 10_000;

/**
 * An inline form that renames `conv`. Enter or Save sends it; Escape or Cancel gives up.
 * @param {{ id: string, title: string }} conv
 * @param {{ onRenamed: (updated: any) => void, onCancel: () => void, onError: (err: unknown) => void }} handlers
 */
export function renameForm(conv, handlers) {
  const input = /** @type {HTMLInputElement} */ (
    el('input', { type: 'text', class: 'rename-input', value: conv.title, maxlength: TITLE_MAX_LENGTH, required: true, 'aria-label': 'New title' })
  );
  const form = el('form', { class: 'rename-form' }, [
    input,
    el('button', { type: 'submit', class: 'icon-button' }, 'Save'),
    el('button', { type: 'button', class: 'icon-button', 'data-action': 'cancel' }, 'Cancel'),
  ]);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const title = input.value.trim();
    if (!title) {
      input.setCustomValidity('The title must not be empty.');
      input.reportValidity();
      return;
    }
    try {
      handlers.onRenamed(await apiJson(`/api/chat/conversations/${conv.id}`, { method: 'PATCH', body: { title } }));
    } catch (err) {
      handlers.onError(err);
    }
  });
  input.addEventListener('input', () => input.setCustomValidity(''));
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      e.stopPropagation();
      handlers.onCancel();
    }
  });
  form.querySelector('[data-action="cancel"]')?.addEventListener('click', () => handlers.onCancel());
  queueMicrotask(() => {
    input.focus();
    input.select();
  });
  return form;
}

/** Asks before a delete. @param {{ title: string }} conv */
export function confirmDelete(conv) {
  const name = conv.title || 'Untitled';
  return window.confirm(`Delete “${name}”?\n\nIts messages, runs and trace are deleted for good. A reply still being written is stopped first.`);
}

/**
 * Deletes the conversation with its messages, runs and trace. A run still running is cancelled
 * and the delete retried until it ended; throws ApiError when the server refused otherwise.
 * @param {{ id: string }} conv
 */
export async function deleteConversation(conv) {
  const until = Date.now() + STOP_WAIT_MS;
  let stopped = '';
  for (;;) {
    try {
      await apiJson(`/api/chat/conversations/${conv.id}`, { method: 'DELETE' });
      return;
    } catch (err) {
      const running = err instanceof ApiError && err.code === 'run_in_progress' ? String(err.body?.requestId ?? '') : '';
      if (!running || Date.now() > until) throw err;
      if (running !== stopped) {
        stopped = running;
        await apiJson(`/api/chat/runs/${running}/cancel`, { method: 'POST', body: {} }).catch(() => undefined); // it may have just ended
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
