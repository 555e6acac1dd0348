import type { components } from '../../generated/openapi.ts';
import type { BatchOperation, BatchResult } from '../db/rows/batch.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { etagOf, ifMatchAt } from '../http/conditional.ts';
import { answerOnce } from '../idempotency/answers.ts';
import { readPatch } from '../patches/index.ts';
import type { Handlers, Result } from './types.ts';

type Operation = components['schemas']['BatchOperation'];

export const batchHandlers: Handlers<'writeBatch'> = {
  async writeBatch({ principal, body, once, admission }, { store, config, meter }) {
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
    const options = { collections: principal.collections ?? undefined, once: once && answerOnce(once, answerBatch) };
    return answerBatch(await store.writeBatch(principal.accountId, read, options));
  },
};

/** A batch's operation as the store takes it; 400 naming it for what openapi.yaml cannot say of it. */
function readOperation(operation: Operation, index: number, maxRows: number): BatchOperation {
  const at = (member: string) => ({ in: 'body' as const, name: `/operations/${index}/${member}` });
  const refused = (detail: string, member: string, message: string) => validationFailed(detail, [{ ...at(member), message }]);
  switch (operation.op) {
    case 'insert':
    case 'upsert':
      if (operation.rows.length > maxRows) {
        throw refused(
          `An operation holds at most ${maxRows} rows; operation ${index} has ${operation.rows.length}.`,
          'rows',
          `must NOT have more than ${maxRows} items`,
        );
      }
      return operation.op === 'insert'
        ? { op: 'insert', collection: operation.collection, rows: operation.rows }
        : { op: 'upsert', collection: operation.collection, rows: operation.rows, onConflict: operation.on_conflict };
    case 'update':
      return {
        op: 'update',
        collection: operation.collection,
        id: operation.id,
        patch: readPatch(operation.patch_format ?? 'merge', operation.patch, at('patch')),
        ifMatch: ifMatchAt(operation.if_match, at('if_match')),
      };
    case 'delete':
      return { op: 'delete', collection: operation.collection, id: operation.id, ifMatch: ifMatchAt(operation.if_match, at('if_match')) };
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
