// A Jest reporter, beside the default one: at the end of a run it says how many cases were
// skipped and why, so a default run (PGlite, maybe no Chromium) never passes over cases silently.
// The reason is read from the title: `[skipped: <need>: <reason>]` (test/support/skip-reason.ts).
// Plain JavaScript because Jest loads reporters without transforming them.
const TAG = /\[skipped: ([^:\]]+(?:\([^)]*\))?): ([^\]]*)\]/;

class SkipSummaryReporter {
  onRunComplete(_contexts, results) {
    const byNeed = new Map();
    let skipped = 0;
    for (const file of results.testResults) {
      for (const t of file.testResults) {
        if (t.status !== 'pending' && t.status !== 'skipped' && t.status !== 'todo') continue;
        skipped++;
        const m = TAG.exec([...t.ancestorTitles, t.title].join(' '));
        const need = m ? m[1] : 'without a reason in their title (an it.skip, or left out by -t)';
        const entry = byNeed.get(need) ?? { count: 0, reasons: new Set() };
        entry.count++;
        if (m) entry.reasons.add(m[2]);
        byNeed.set(need, entry);
      }
    }
    if (!skipped) return;
    const parts = [...byNeed].map(([need, e]) => `${e.count} ${need.replace(/^needs /, e.count === 1 ? 'needs ' : 'need ')}${e.reasons.size ? ` (${[...e.reasons].join('; ')})` : ''}`);
    process.stderr.write(`\nskipped ${skipped}: ${parts.join('; ')}\n`);
  }
}

module.exports = SkipSummaryReporter;
