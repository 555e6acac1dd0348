// The handler of the `batch` tag: a batch of writes in one transaction.
import type { components } from '../../generated/openapi.ts';
import type { Principal } from '../db/accounts/keys.ts';
import type { BatchOperation, BatchResult } from '../db/rows/batch.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { etagOf, ifMatchAt } from '../http/conditional.ts';
import { answerOnce } from '../idempotency/answers.ts';
import { readPatch } from '../patches/index.ts';
import { type Grant, patchUses } from '../rules/access.ts';
import { grantsIn } from './grants.ts';
import type { Handlers, Result } from './types.ts';

type Operation = components['schemas']['BatchOperation'];

export const batchHandlers: Handlers<'writeBatch'> = {
  async writeBatch({ principal, body, once, admission, claims }, { store, config, meter }) {
    const { operations } = body;
    // The bounds are the server's settings, so openapi.yaml states them in words, not as maxItems.
    if (operations.length > config.maxBatchOperations) {
      throw validationFailed(`A batch holds at most ${config.maxBatchOperations} operations; this one has ${operations.length}.`, [
        { in: 'body', name: '/operations', message: `must NOT have more than ${config.maxBatchOperations} items` },
      ]);
    }
    const read = operations.map((operation, index) => {
      try {
        return readOperation(operation, index, config.maxBatchRows);
      } catch (error) {
        throw error instanceof ApiError ? error.inOperation(index) : error;
      }
    });
    // One request per operation (openapi.yaml, writeBatch): its arrival counted the first.
    if (admission && operations.length > 1) await meter.admitMore(principal.accountId, operations.length - 1, admission);
    const grants = await grantsIn(store, principal, claims, visible(principal, read));
    if (grants) {
      for (const [index, operation] of read.entries()) {
        // A collection the key may not reach has no grant: its operation answers its 404.
        const grant = grants.get(operation.collection);
        if (!grant || operation.op === 'delete') continue;
        try {
          // The fields the rules fill from the caller's token, in every row it sends, before any check.
          if (operation.op !== 'update') read[index] = { ...operation, rows: operation.rows.map((fields) => grant.filled(fields)) };
          if (operation.op === 'insert') continue;
          const at = memberAt(index, operation.op === 'update' ? 'patch' : 'on_conflict');
          grant.checkReadable(
            operation.op === 'update'
              ? patchUses(operation.patch, at, grant.hideable)
              : operation.onConflict.map((field) => ({ field, at })),
          );
        } catch (error) {
          throw error instanceof ApiError ? error.inOperation(index) : error;
        }
      }
    }
    // The rows of each result as the caller may see them.
    const answer = (results: BatchResult[]) =>
      answerBatch(grants ? results.map((result, index) => maskedResult(result, grants.get(read[index].collection) as Grant)) : results);
    const options = {
      collections: principal.collections ?? undefined,
      once: once && answerOnce(once, answer),
      guards: grants && ((collection: string) => grants.get(collection) as Grant),
    };
    return answer(await store.writeBatch(principal.accountId, read, options));
  },
};

/** A batch's operation as the store takes it; 400 naming it for what openapi.yaml cannot say of it. */
function readOperation(operation: Operation, index: number, maxRows: number): BatchOperation {
  switch (operation.op) {
    case 'insert':
    case 'upsert':
      if (operation.rows.length > maxRows) {
        throw validationFailed(`An operation holds at most ${maxRows} rows; operation ${index} has ${operation.rows.length}.`, [
          { ...memberAt(index, 'rows'), message: `must NOT have more than ${maxRows} items` },
        ]);
      }
      return operation.op === 'insert'
        ? { op: 'insert', collection: operation.collection, rows: operation.rows }
        : { op: 'upsert', collection: operation.collection, rows: operation.rows, onConflict: operation.on_conflict };
    case 'update':
      return {
        op: 'update',
        collection: operation.collection,
        id: operation.id,
        patch: readPatch(operation.patch_format ?? 'merge', operation.patch, memberAt(index, 'patch')),
        ifMatch: ifMatchAt(operation.if_match, memberAt(index, 'if_match')),
      };
    case 'delete':
      return {
        op: 'delete',
        collection: operation.collection,
        id: operation.id,
        ifMatch: ifMatchAt(operation.if_match, memberAt(index, 'if_match')),
      };
  }
}

/** Where in the body a member of operation `index` is, as a problem names it. */
function memberAt(index: number, member: string): { in: 'body'; name: string } {
  return { in: 'body', name: `/operations/${index}/${member}` };
}

/** The collections a batch names that the key may reach: another is not found, as outside a batch. */
function visible(principal: Principal, operations: readonly BatchOperation[]): string[] {
  return operations.map((operation) => operation.collection).filter((collection) => principal.collections?.has(collection) ?? true);
}

/** A result's rows without the fields its collection's rules hide from the caller; a new row's as it was sent. */
function maskedResult(result: BatchResult, grant: Grant): BatchResult {
  switch (result.op) {
    case 'update':
      return { ...result, row: { ...result.row, json: grant.maskRow(result.row.json) } };
    case 'upsert':
      return { ...result, rows: { ...result.rows, json: grant.maskRows(result.rows.json) } };
    default:
      return result;
  }
}

/** The batch's answer: each operation's result as its own request answers it (openapi.yaml, BatchResult). */
function answerBatch(results: BatchResult[]): Result {
  return { status: 200, body: `{"results":[${results.map(resultJson).join(',')}]}` };
}

/** An operation's result as JSON text, its rows placed as the data layer made them. */
function resultJson(result: BatchResult): string {
  switch (result.op) {
    case 'insert':
      return `{"status":201,"body":${result.rows.json},"etags":${JSON.stringify(result.rows.versions.map(etagOf))}}`;
    case 'upsert':
      return `{"status":200,"body":${result.rows.json},"etags":${JSON.stringify(result.rows.versions.map(etagOf))}}`;
    case 'update':
      return `{"status":200,"body":${result.row.json},"etag":${JSON.stringify(etagOf(result.row.version))}}`;
    case 'delete':
      return '{"status":204}';
  }
}
