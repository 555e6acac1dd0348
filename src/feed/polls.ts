// The long polls of the changes over HTTP that wait on this instance (Feed.waitForPage), handed over by
// their requests (handlers/feed.ts): each follows its collection's tail as a Waiter (waiter.ts) until a
// change it shows, its deadline or the feed's close wakes it, then answers on its response.
import type { ServerResponse } from 'node:http';
import { problemResult, toApiError } from '../http/problems.ts';
import { requestIdOf } from '../http/request-id.ts';
import type { LaterAnswer, Result } from '../http/responder.ts';
import type { Logger } from '../log.ts';
import type { Tails } from './tails.ts';
import { type PollWait, Waiter } from './waiter.ts';

export class LongPolls {
  /** The polls waiting: woken when the feed closes. */
  private readonly waiters = new Set<Waiter>();
  /** The polls under way, waiting or answering: the feed closes once they have answered. */
  private readonly answering = new Set<Promise<void>>();
  private closing = false;

  constructor(
    private readonly tails: Tails,
    private readonly log: Logger,
  ) {}

  /** Polls waiting now. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** `poll`'s answer, given once it is known (LaterAnswer.start): the poll is this instance's from then on. */
  later(poll: PollWait): LaterAnswer {
    return new LaterPoll(this, poll);
  }

  /** Wakes every poll waiting, to answer what it has now; settles once every poll under way has answered. */
  close(): Promise<unknown> {
    this.closing = true;
    for (const waiter of this.waiters) waiter.close();
    return Promise.all(this.answering);
  }

  /** Starts `poll`'s wait on `response`, its answer written with `write` (LaterAnswer.start). */
  start(poll: PollWait, response: ServerResponse, write: (result: Result) => void): void {
    const answering = this.answer(poll, response, write)
      .catch((error) => this.log.error({ err: error }, 'changes long poll failed'))
      .finally(() => this.answering.delete(answering));
    this.answering.add(answering);
  }

  /**
   * Waits for `poll`'s answer and writes it with `write`, or nothing once its client has gone
   * (`response` closed, maybe before it was handed over). Its place is given back before it answers. A
   * refusal that comes meanwhile (the collection deleted: 404; its events pruned: 410) is its answer.
   */
  private async answer(poll: PollWait, response: ServerResponse, write: (result: Result) => void): Promise<void> {
    let waiter: Waiter | undefined;
    let gone = response.destroyed || response.socket?.destroyed !== false;
    response.once('close', () => {
      gone = true;
      waiter?.close();
    });
    let after = poll.change.after;
    try {
      while (!gone) {
        waiter = new Waiter({ ...poll.change, after }, poll.deadline);
        this.follow(waiter);
        await waiter.woken;
        this.waiters.delete(waiter);
        if (gone) break;
        const answer = await poll.answer(after, this.closing || Date.now() >= poll.deadline);
        if (gone) break;
        if (typeof answer === 'number') {
          after = answer;
          continue;
        }
        poll.release();
        write(answer);
        break;
      }
    } catch (error) {
      if (gone) return;
      const problem = toApiError(error);
      const requestId = requestIdOf(response.req);
      if (problem.status >= 500) this.log.error({ requestId, err: error }, 'changes long poll failed');
      poll.release();
      write(problemResult(problem, requestId));
    } finally {
      poll.release();
    }
  }

  /** Has `waiter` follow its collection's tail until it is woken; wakes it at once if the feed closes. */
  private follow(waiter: Waiter): void {
    if (this.closing) {
      waiter.close();
      return;
    }
    const { accountId, collectionId, collection } = waiter.wait;
    this.waiters.add(waiter);
    this.tails.of(accountId, collectionId, collection).follow(waiter);
  }
}

/** A poll's answer given later: the poll starts waiting once its response is given. */
class LaterPoll implements LaterAnswer {
  constructor(
    private readonly polls: LongPolls,
    private readonly poll: PollWait,
  ) {}

  start(response: ServerResponse, write: (result: Result) => void): void {
    this.polls.start(this.poll, response, write);
  }
}
