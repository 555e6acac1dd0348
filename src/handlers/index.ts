// Every handler of openapi.yaml, by operationId: one module per tag.
import { authHandlers } from './auth.ts';
import { batchHandlers } from './batch.ts';
import { collectionHandlers } from './collections.ts';
import { contractHandlers } from './contract.ts';
import { declarationHandlers } from './declaration.ts';
import { expiryHandlers } from './expiry.ts';
import { feedHandlers } from './feed.ts';
import { keyHandlers } from './keys.ts';
import { relationHandlers } from './relations.ts';
import { rowHandlers } from './rows.ts';
import { ruleHandlers } from './rules.ts';
import { serviceHandlers } from './service.ts';
import type { Handlers, OperationId } from './types.ts';
import { usageHandlers } from './usage.ts';
import { webhookHandlers } from './webhooks.ts';

/** Every operation of openapi.yaml, bound by operationId; one module per tag. */
export const handlers: Handlers<OperationId> = {
  ...collectionHandlers,
  ...rowHandlers,
  ...batchHandlers,
  ...usageHandlers,
  ...keyHandlers,
  ...serviceHandlers,
  ...contractHandlers,
  ...webhookHandlers,
  ...authHandlers,
  ...ruleHandlers,
  ...feedHandlers,
  ...relationHandlers,
  ...declarationHandlers,
  ...expiryHandlers,
};
