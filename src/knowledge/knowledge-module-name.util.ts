/**
 * Modules group a project's documents so the model can tell when `rag_query` helps
 * ("Roadmap", "Installation", "API"). A file's module is the top-level folder it lies in under
 * the project; files directly in the project folder belong to ROOT_MODULE.
 */

/** The module of files at the project's top level. */
export const ROOT_MODULE = 'general';
/** Longest module name stored (knowledge_chunks.module is varchar(128)). */
export const MODULE_MAX_CHARS = 128;

/** The module of a `/`-separated path relative to the project folder. */
export function moduleOfPath(relativePath: string): string {
  const segments = relativePath.split('/').filter((s) => s !== '' && s !== '.');
  return segments.length > 1 ? segments[0].slice(0, MODULE_MAX_CHARS) : ROOT_MODULE;
}

/** Words written in capitals when a module name is shown. */
const ACRONYMS = new Set(['api', 'cli', 'sdk', 'faq', 'ui', 'ux', 'http', 'sql', 'id', 'llm', 'rag', 'mcp', 'ci', 'cd', 'db', 'json', 'url', 'sse', 'io', 'os']);

/**
 * A module name as people read it: separators (`-`, `_`, `.`, spaces, camelCase humps) become
 * spaces, each word is capitalized, known acronyms are upper-cased:
 * `getting-started` → `Getting Started`, `apiReference` → `API Reference`.
 */
export function displayNameOf(module: string): string {
  const words = module
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[\s_.-]+/)
    .filter(Boolean);
  if (words.length === 0) return module;
  return words
    .map((w) => (ACRONYMS.has(w.toLowerCase()) ? w.toUpperCase() : w[0].toUpperCase() + w.slice(1)))
    .join(' ');
}
