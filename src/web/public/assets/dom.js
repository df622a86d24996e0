// Tiny DOM helpers shared by the chat page and the debug panel. Text always goes in as text
// nodes, never as HTML; the only markup from outside is sanitized Markdown (markdown.js).

/** @param {string} id */
export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`#${id} is missing from the page`);
  return node;
}

/**
 * Creates an element. Attributes with null, undefined or false are left out, true sets an
 * empty one; `hidden` is the property. Children: strings (as text), nodes, arrays, nulls skipped.
 * @param {string} tag
 * @param {Record<string, string | number | boolean | null | undefined>} [attrs]
 * @param {unknown} [children]
 * @returns {HTMLElement}
 */
export function el(tag, attrs = {}, children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'hidden') node.hidden = true;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

/** @param {HTMLElement} node @param {unknown} children */
function append(node, children) {
  if (children === null || children === undefined || children === false) return;
  if (Array.isArray(children)) for (const c of children) append(node, c);
  else if (children instanceof Node) node.append(children);
  else node.append(document.createTextNode(String(children)));
}

/** "14:03" for today, "12 Mar" before. @param {string} iso */
export function formatWhen(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const now = new Date();
  return d.toDateString() === now.toDateString()
    ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString([], { day: 'numeric', month: 'short' });
}
