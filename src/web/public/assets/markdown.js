// Model output as Markdown: marked turns it into HTML, DOMPurify keeps only inert HTML, and
// the page's Content-Security-Policy is the wall behind both (no script runs, no image from
// another host loads). Images in answers are not loaded at all, same-origin ones included: a
// model should not make the browser send requests (an <img> pointing at an API route would).

const { marked, DOMPurify } = /** @type {any} */ (window);

const SAFE_LINK = /^(https?:|mailto:|#)/i;

let hooked = false;

function installHooks() {
  if (hooked) return;
  hooked = true;
  DOMPurify.addHook('afterSanitizeAttributes', (/** @type {Element} */ node) => {
    if (node.tagName === 'A') {
      const href = node.getAttribute('href') ?? '';
      if (!SAFE_LINK.test(href.trim())) node.removeAttribute('href');
      else if (!href.startsWith('#')) {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer nofollow');
      }
    }
    if (node.tagName === 'IMG') {
      const src = node.getAttribute('src') ?? '';
      if (!/^data:image\//i.test(src)) {
        // marked for replacement by a text placeholder once sanitizing is done
        node.setAttribute('data-blocked-src', src.slice(0, 300));
        node.removeAttribute('src');
        node.removeAttribute('srcset');
      }
    }
  });
}

/**
 * Markdown to sanitized DOM. GitHub-flavoured; raw HTML in the text is allowed through marked
 * and then cut down by DOMPurify to formatting tags (no script, style, form, iframe, event
 * handlers, inline styles). Images that are not inline data become a text placeholder.
 * @param {string} text
 * @returns {DocumentFragment}
 */
export function renderMarkdown(text) {
  installHooks();
  const html = marked.parse(text ?? '', { gfm: true, breaks: false, async: false });
  /** @type {DocumentFragment} */
  const fragment = DOMPurify.sanitize(html, {
    USE_PROFILE: { html: true },
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'option', 'iframe', 'frame', 'object', 'embed', 'video', 'audio', 'source', 'picture', 'svg', 'math'],
    FORBID_ATTR: ['style', 'srcset', 'formaction', 'background', 'poster'],
    ALLOW_DATA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  });
  for (const img of fragment.querySelectorAll('img[data-blocked-src]')) {
    const placeholder = document.createElement('span');
    placeholder.className = 'blocked-image';
    placeholder.title = `Not loaded: ${img.getAttribute('data-blocked-src')}`;
    placeholder.textContent = `[image not loaded: ${img.getAttribute('alt') || img.getAttribute('data-blocked-src') || 'image'}]`;
    img.replaceWith(placeholder);
  }
  return fragment;
}
