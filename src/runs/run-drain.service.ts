import { Injectable, Logger } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { Drain } from '../common/lifecycle/drain';
import { RunControlService } from './run-control.service';
import { RunEventsService } from './run-events.service';
import { RunExecutorService } from './run-executor.service';
import { RunHandover } from './run-handover';
import { RunSweeperService } from './run-sweeper.service';

/**
 * A rolling deploy's SIGTERM (issue 44, item 4), before the application closes (bootstrap.ts):
 * 1. the instance drains: no new turn (503 shutting_down with Retry-After), readiness down;
 * 2. the turns running here get SHUTDOWN_GRACE_MS to finish (short turns end here as usual);
 * 3. those still running are handed over at their next checkpoint (a two-stage phase's, a
 *    unified step's; those whose protocol keeps none are cancelled here with their answer so
 *    far, as before the drain), within HANDOVER_WAIT_MS; one
 *    that reaches none (a long final answer) is handed over where it is, and the taker continues
 *    from its last stored checkpoint (the cut text superseded). Handing over releases the lease,
 *    so another instance's next sweep takes the run over;
 * 4. this instance's clients of handed-over runs read what the taker stores, for up to a lease;
 * 5. the streams that only follow runs here (the events route and the routes built on it) are
 *    sent what is stored and end, without the run's end: their clients reconnect elsewhere
 *    (Last-Event-ID), and nothing keeps the process from closing.
 * Runs that wait for a person are left to the executor's shutdown, which hands them over too.
 * The instance's own sweeps stop at once: it takes no run over while it leaves.
 */
@Injectable()
export class RunDrainService {
  /** how long, past the grace period, a running turn has to reach its next checkpoint */
  static readonly HANDOVER_WAIT_MS = 5_000;
  /** how long the followers ended by the drain have to send what is stored */
  static readonly FOLLOWERS_WAIT_MS = 2_000;
  private static readonly POLL_MS = 50;
  private readonly logger = new Logger('Drain');

  constructor(
    private readonly drain: Drain,
    private readonly executor: RunExecutorService,
    private readonly handover: RunHandover,
    private readonly control: RunControlService,
    private readonly config: AppConfigService,
    private readonly sweeper: RunSweeperService,
    private readonly followers: RunEventsService,
  ) {}

  /** Drains this instance; resolves when nothing runs here any more. How many turns ended here and how many were handed over. */
  async run(graceMs = this.config.get('SHUTDOWN_GRACE_MS')): Promise<{ finished: number; handedOver: number }> {
    this.drain.start();
    // a leaving instance takes nothing over: its sweeps stop, the other instances' sweeps take what it hands over
    this.sweeper.onApplicationShutdown();
    const started = new Set(this.executor.busy);
    this.logger.warn(`draining: ${started.size} turn(s) running, ${graceMs} ms to finish`);
    await this.until(() => this.executor.busy.length === 0, graceMs);
    // a run no other instance can continue (its protocol keeps no checkpoints) ends here as a
    // shutdown always ended it, `done{cancelled}` with what it had answered, instead of being
    // handed over only to be closed `instance_lost` by the taker
    const stay = this.executor.busy.filter((id) => !this.executor.continuesElsewhere(id));
    for (const id of stay) this.control.cancelLocal(id, 'shutdown');
    const rest = this.executor.busy.filter((id) => this.executor.continuesElsewhere(id));
    this.handover.ask(rest);
    await this.until(() => !this.executor.busy.some((id) => rest.includes(id)), rest.length ? RunDrainService.HANDOVER_WAIT_MS : 0);
    // no checkpoint in time: stopped where they are (fenced first, so the stop stores nothing)
    const cut = this.executor.busy.filter((id) => rest.includes(id));
    for (const id of cut) {
      // fenced at once (release's first step, before it awaits the database), then stopped once
      // released: what the turn stores meanwhile, or while it stops, is refused here
      await this.handover.release(id);
      this.control.cancelLocal(id, 'lease_lost');
    }
    // their clients here follow the takers' events until the end, for up to a lease (runs waiting
    // for a person are not waited for: the executor's shutdown hands them over next)
    await this.until(() => this.executor.busy.length === 0 && !this.executor.forwardingClients, rest.length ? this.config.get('RUN_LEASE_MS') : 0);
    const following = this.followers.following;
    this.drain.endFollowers();
    await this.until(() => this.followers.following === 0, following ? RunDrainService.FOLLOWERS_WAIT_MS : 0);
    if (following) this.logger.warn(`ended ${following} stream(s) following runs here (their clients reconnect elsewhere); ${this.followers.following} still open`);
    const handedOver = rest.length;
    this.logger.warn(`drained: ${started.size - handedOver - stay.length} turn(s) finished here, ${stay.length} cancelled (no checkpoint to continue from), ${handedOver} handed over (${cut.length} between checkpoints)`);
    return { finished: started.size - handedOver, handedOver };
  }

  private async until(done: () => boolean, ms: number): Promise<void> {
    const end = Date.now() + ms;
    while (!done() && Date.now() < end) await new Promise((r) => setTimeout(r, RunDrainService.POLL_MS));
  }
}
