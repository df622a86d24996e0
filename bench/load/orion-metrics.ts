/** Readings from a running Orion's GET /metrics. Every scrape resets the event-loop delay histogram. */
async function scrape(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

/** Event-loop delay p99 (ms) since the previous scrape. */
export async function metricsLagP99(port: number): Promise<number> {
  return Number(/^nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(await scrape(port))?.[1]) * 1000;
}

/** Statements the instance has sent to its database since it started (orion_db_statements_total). */
export async function statementsSent(port: number): Promise<number> {
  return Number(/^orion_db_statements_total (\S+)$/m.exec(await scrape(port))?.[1]);
}
