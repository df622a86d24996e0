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

const SVG = 'http://www.w3.org/2000/svg';
/** Icon outlines (24×24, stroked): drawn as SVG, so no emoji font is needed. */
const ICONS = {
  // a bin: lid, handle, body with two lines
  trash: ['M4 7h16', 'M9 7V4h6v3', 'M6 7l1 13h10l1-13', 'M10 11v6', 'M14 11v6'],
  // a pencil
  pencil: ['M4 20l1-5L16 4l4 4L9 19z', 'M14 6l4 4'],
};

/**
 * An inline SVG icon (decorative: the button around it carries the label).
 * @param {keyof typeof ICONS} name
 * @returns {SVGSVGElement}
 */
export function icon(name) {
  const svg = /** @type {SVGSVGElement} */ (document.createElementNS(SVG, 'svg'));
  for (const [k, v] of Object.entries({ viewBox: '0 0 24 24', width: '16', height: '16', fill: 'none', stroke: 'currentColor', 'stroke-width': '2', 'stroke-linecap': 'round', 'stroke-linejoin': 'round', 'aria-hidden': 'true', focusable: 'false', class: `icon icon-${name}` })) svg.setAttribute(k, v);
  for (const d of ICONS[name]) {
    const path = document.createElementNS(SVG, 'path');
    path.setAttribute('d', d);
    svg.append(path);
  }
  return svg;
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
