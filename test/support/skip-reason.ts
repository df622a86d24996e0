/**
 * A case skipped in some runs says why in its title, where test/support/skip-summary-reporter.js
 * finds it and sums it up at the end of the run: `[skipped: <need>: <reason>]`.
 */
export function skippedTitle(title: string, need: string, reason: string): string {
  return `${title} [skipped: ${need}: ${reason}]`;
}

export const NEEDS_POSTGRES = 'needs PostgreSQL (DATABASE_URL)';
export const NEEDS_CHROMIUM = 'needs Chromium';
