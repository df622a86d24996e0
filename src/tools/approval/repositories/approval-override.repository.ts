import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

/** A row of tool_approval_overrides (migration 1764420000000) as the service hands it on. */
export interface ApprovalOverrideRow {
  projectId: string;
  require: string[];
  exempt: string[];
  updatedAt: Date;
  updatedBy: string | null;
}

interface RawRow {
  project_id: string;
  require_patterns: string[];
  exempt_patterns: string[];
  updated_at: Date;
  updated_by: string | null;
}

/** The tool_approval_overrides table: one row per project that has an override. */
@Injectable()
export class ApprovalOverrideRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  async find(projectId: string): Promise<ApprovalOverrideRow | null> {
    const rows = (await this.ds.query('SELECT * FROM tool_approval_overrides WHERE project_id = $1', [projectId])) as RawRow[];
    return rows[0] ? toRow(rows[0]) : null;
  }

  /** Replaces the project's override (one statement: a concurrent PUT is last-writer-wins). */
  async upsert(projectId: string, require: string[], exempt: string[], updatedBy: string | null): Promise<ApprovalOverrideRow> {
    const rows = (await this.ds.query(
      `INSERT INTO tool_approval_overrides (project_id, require_patterns, exempt_patterns, updated_at, updated_by)
       VALUES ($1, $2::jsonb, $3::jsonb, now(), $4)
       ON CONFLICT (project_id) DO UPDATE SET require_patterns = EXCLUDED.require_patterns, exempt_patterns = EXCLUDED.exempt_patterns,
         updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by
       RETURNING *`,
      [projectId, JSON.stringify(require), JSON.stringify(exempt), updatedBy],
    )) as RawRow[];
    return toRow(rows[0]);
  }
}

function toRow(r: RawRow): ApprovalOverrideRow {
  return { projectId: r.project_id, require: r.require_patterns, exempt: r.exempt_patterns, updatedAt: r.updated_at, updatedBy: r.updated_by };
}
