/**
 * Writes one repository hands to another's statement, to run in it: data-modifying CTEs whose
 * placeholders are numbered from $1 in `params` order (the statement numbers its own after
 * them). A turn's start stores its conversation, user message and run this way: one round trip
 * and one commit instead of three, and the three are stored together or not at all.
 */
export interface StatementPrelude {
  ctes: string[];
  params: unknown[];
}

/** `WITH …` for a statement that runs `prelude` first ('' without one). */
export function withPrelude(prelude: StatementPrelude | undefined): string {
  return prelude && prelude.ctes.length > 0 ? `WITH ${prelude.ctes.join(',\n     ')}\n` : '';
}
