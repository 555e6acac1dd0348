// The places each account holds on this server: its feed sockets and changes streams open, or being
// opened, and its long polls waiting (ws/feed.ts), each holding one until its connection closes, or until
// the poll stops waiting; as many at once as config.feedMaxSocketsPerAccount says.
import { ApiError } from '../errors.ts';

export class AccountPlaces {
  private readonly held = new Map<number, number>();

  /** `max`: the places an account may hold at once. */
  constructor(private readonly max: number) {}

  /**
   * Takes one of the account's places, or answers undefined when it has none left. Answers what gives it
   * back (once, however often called).
   */
  free(accountId: number): (() => void) | undefined {
    const held = this.held.get(accountId) ?? 0;
    if (held >= this.max) return undefined;
    this.held.set(accountId, held + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.held.get(accountId) ?? 1) - 1;
      if (left > 0) this.held.set(accountId, left);
      else this.held.delete(accountId);
    };
  }

  /**
   * Takes one of the account's places, before the upgrade is counted (a refusal with 429 is not), or
   * throws the 429 when it has none left. Answers what gives it back (once, however often called).
   */
  take(accountId: number): () => void {
    const release = this.free(accountId);
    if (release) return release;
    throw new ApiError(
      'too_many_connections',
      `The account holds ${this.held.get(accountId)} feed sockets, changes streams and waiting long polls on this server, as many as it may; close one first.`,
    );
  }
}
