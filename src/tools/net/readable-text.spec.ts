import { HOSTILE_HTML, HOSTILE_PLAIN_TEXT } from '../../../test/support/hostile-html';
import { capText, collapseWhitespace, extractReadableText, plainText, READABLE_TEXT_DEFAULTS } from './readable-text';

const para = (n: number) =>
  Array.from({ length: n }, (_, i) => `<p>Paragraph ${i + 1}: the colony stores grain in the north silo and trades it for iron each autumn.</p>`).join('\n');

const ARTICLE = `<!doctype html>
<html lang="en"><head>
  <title>Colony Logistics - The Frontier Gazette</title>
  <meta name="description" content="How the colony moves grain.">
  <meta property="og:site_name" content="The Frontier Gazette">
  <meta name="author" content="Ada Quill">
  <style>body { color: red }</style>
  <script>window.secret = "do not read me"</script>
</head><body>
  <nav><a href="/">Home</a> | <a href="/news">News</a> | <a href="/login">Log in</a></nav>
  <article>
    <h1>Colony Logistics</h1>
    ${para(8)}
    <ul><li>Grain &amp; flour</li><li>Iron&nbsp;ore</li></ul>
  </article>
  <footer>© 2026 Gazette. All rights reserved.</footer>
  <script>trackVisitor()</script>
</body></html>`;

describe('extractReadableText', () => {
  it('extracts the article with title, byline, site name and excerpt', () => {
    const r = extractReadableText(ARTICLE);
    expect(r.title).toBe('Colony Logistics - The Frontier Gazette');
    expect(r.byline).toBe('Ada Quill');
    expect(r.siteName).toBe('The Frontier Gazette');
    expect(r.excerpt).toBe('How the colony moves grain.');
    expect(r.text).toContain('Paragraph 1: the colony stores grain');
    expect(r.text).toContain('Paragraph 8:');
    expect(r.text).toContain('- Grain & flour\n- Iron ore');
    expect(r.text).not.toMatch(/do not read me|trackVisitor|color: red|Log in/);
    expect(r.truncated).toBe(false);
  });

  it('keeps paragraphs apart and collapses whitespace', () => {
    const r = extractReadableText(ARTICLE);
    expect(r.text).toMatch(/silo and trades it for iron each autumn\.\n\nParagraph 2:/);
    expect(r.text).not.toMatch(/ {2}|\n{3}|\t/);
  });

  it('caps the text at maxChars and says so', () => {
    const r = extractReadableText(ARTICLE, { maxChars: 120 });
    expect(r.text.length).toBe(120);
    expect(r.truncated).toBe(true);
  });

  it('falls back to the page text when there is no article', () => {
    const r = extractReadableText('<html><head><title>Tiny</title></head><p>only a line</p></html>');
    expect(r.title).toBe('Tiny');
    expect(r.text).toBe('only a line');
  });

  it('reads fragments with no <html> element', () => {
    const r = extractReadableText('<title>Frag</title><h2>Hello</h2><p>World &lt;3</p>');
    expect(r.title).toBe('Frag');
    expect(r.text).toContain('Hello');
    expect(r.text).toContain('World <3');
    expect(r.text).not.toContain('Frag');
  });

  it('survives deeply nested markup without overflowing the stack', () => {
    const depth = 1_500;
    const html = `<html><body>${'<div>'.repeat(depth)}deep text${'</div>'.repeat(depth)}</body></html>`;
    expect(extractReadableText(html).text).toContain('deep text');
  });

  it('returns empty text for an empty document', () => {
    expect(extractReadableText('')).toMatchObject({ text: '', truncated: false });
  });
});

describe('text helpers', () => {
  it('collapseWhitespace trims lines and keeps one blank line at most', () => {
    expect(collapseWhitespace('  a \t b \r\n\r\n\r\n\n c\u00a0\u00a0d \u200b')).toBe('a b\n\nc d');
  });

  it('capText never splits a surrogate pair', () => {
    expect(capText('ab😀cd', 3)).toEqual({ text: 'ab', truncated: true });
    expect(capText('abc', 3)).toEqual({ text: 'abc', truncated: false });
  });

  it('plainText takes a Markdown heading as the title', () => {
    const r = plainText('intro\n# Roadmap\n\n\n\n- ship it   \n', 1000);
    expect(r).toMatchObject({ title: 'Roadmap', text: 'intro\n# Roadmap\n\n- ship it', truncated: false });
  });
});

describe('hostile HTML', () => {
  // these pages are built to make extraction slow; how long they take is bench:readable-text's figure
  jest.setTimeout(120_000);

  it.each(HOSTILE_HTML)('handles %s: a text within the cap', (_label, html) => {
    const r = extractReadableText(html);
    expect(typeof r.text).toBe('string');
    expect(r.text.length).toBeLessThanOrEqual(READABLE_TEXT_DEFAULTS.maxChars);
  });

  it('gives the text of a page too deep for a DOM', () => {
    const html = `<title>Deep &amp; dark</title><script>if (a<b) x = "</div>";</script>${'<div>'.repeat(5_000)}deep&nbsp;text<br>next${'</div>'.repeat(5_000)}`;
    const r = extractReadableText(html);
    expect(r).toMatchObject({ title: 'Deep & dark', text: 'deep text\nnext', truncated: false });
  });

  it('plain text with a long run of trailing spaces gives the text after it', () => {
    expect(plainText(HOSTILE_PLAIN_TEXT)).toMatchObject({ text: 'x', truncated: false });
  });
});
