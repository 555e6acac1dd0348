import { collectionHandlers } from './collections.ts';
import { docsHandlers } from './docs.ts';
import { rowHandlers } from './rows.ts';
import { serviceHandlers } from './service.ts';
import type { Handlers, OperationId } from './types.ts';
import { usageHandlers } from './usage.ts';

/** Every operation of openapi.yaml, bound by operationId; one module per tag. */
export const handlers: Handlers<OperationId> = {
  ...collectionHandlers,
  ...rowHandlers,
  ...usageHandlers,
  ...serviceHandlers,
  ...docsHandlers,
};
