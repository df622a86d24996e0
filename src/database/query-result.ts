/**
 * What a raw `INSERT|UPDATE|DELETE … RETURNING` query gave back: TypeORM's postgres driver
 * answers `[rows, affected]`, others (and SELECTs) the rows alone.
 */
export function queryResult(res: unknown): { rows: unknown[]; count: number } {
  if (Array.isArray(res) && res.length === 2 && Array.isArray(res[0]) && typeof res[1] === 'number') return { rows: res[0], count: res[1] };
  const rows = Array.isArray(res) ? res : [];
  return { rows, count: rows.length };
}
