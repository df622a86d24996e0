/**
 * Many rows passed to PostgreSQL as ONE jsonb parameter (a JSON array of row arrays) and read
 * back with `jsonb_array_elements($1::jsonb)`, instead of a VALUES list with a placeholder per
 * cell. The statement's text then stays the same whatever the number of rows, so it can be a
 * prepared statement (preparedQuery), parsed and planned once per connection; a VALUES list is a
 * new text for every row count. It also lifts the protocol's cap of 65,535 parameters.
 * `npm run bench:statements` compares the shapes (bench/README.md, "Statement shapes").
 *
 * Read a row's cells with `e->>i` (text; a JSON null reads as SQL NULL) and `e->i` (jsonb).
 */

import { stripNul } from '../common/util/text-safety.util';

/**
 * A cell that is already JSON text (an event's serialized envelope): embedded as it is, so it
 * must be JSON.stringify's output of a value made storage-safe (a malformed text would break the
 * whole parameter, not only its own row).
 */
export class RawJson {
  constructor(readonly text: string) {}
}

export type JsonCell = string | number | boolean | null | RawJson;

/** The parameter's text: `[[cell, …], …]`, RawJson cells embedded without a second serialization. */
export function jsonRows(rows: ReadonlyArray<ReadonlyArray<JsonCell>>): string {
  let out = '[';
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) out += ',';
    out += '[';
    const row = rows[i];
    for (let j = 0; j < row.length; j++) {
      if (j > 0) out += ',';
      const cell = row[j];
      // a text cell as node-postgres would have sent it as a parameter of its own: NUL and lone
      // surrogates, which jsonb refuses as JSON escapes, become U+FFFD
      out += cell instanceof RawJson ? cell.text : JSON.stringify(typeof cell === 'string' ? stripNul(cell) : cell);
    }
    out += ']';
  }
  return out + ']';
}
