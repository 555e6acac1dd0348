// What a write leaves for after its transaction commits: a database index dropped outside it, a schema id
// noted, a worker woken. An operation that works inside a transaction it is handed (an area's `…In`) pushes
// such work here, and whoever began the transaction runs it once it has committed: the operation itself
// for one request, or a declaration's apply (../declarations/apply.ts) for all of its steps.

/** The work to run after the commit, in the order it was pushed. */
export type AfterCommit = (() => unknown)[];

/** Runs the work `after`, one after another. */
export async function afterCommit(after: AfterCommit): Promise<void> {
  for (const work of after) await work();
}
