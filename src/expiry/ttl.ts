// A collection's time to live (openapi.yaml, the `expiry` tag; docs/expiry.md): what its field may be
// against the collection's schema, and the clock expiries are read by. Both sides of the data layer use it.
import { validationFailed } from '../errors.ts';

/** A collection's time to live as openapi.yaml's `Ttl` says it. */
export interface Ttl {
  field: string;
}

const fieldError = (message: string) => [{ in: 'body' as const, name: '/field', message }];

/**
 * 400 when the collection's schema (`schema`, undefined for none) cannot hold an RFC 3339 date-time in
 * the top-level `field`: it types the field as anything but a `date-time` string (`null` beside it
 * allowed), or forbids other properties and does not name it.
 */
export function checkTtlField(field: string, schema: Record<string, unknown> | undefined): void {
  if (!schema) return;
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  const property = Object.hasOwn(properties, field) ? properties[field] : undefined;
  if (property === undefined) {
    if (schema.additionalProperties === false || schema.unevaluatedProperties === false)
      throw validationFailed(
        `The collection's schema allows no field ${field}: its rows could never expire.`,
        fieldError('is not among the properties of a schema that forbids others'),
      );
    return;
  }
  const typed = property as { type?: unknown; format?: unknown };
  const types = Array.isArray(typed.type) ? typed.type : [typed.type];
  const dateTime = typed.format === 'date-time' && types.includes('string') && types.every((type) => type === 'string' || type === 'null');
  if (!dateTime)
    throw validationFailed(
      `The collection's schema types field ${field} as something other than a date-time string.`,
      fieldError('must be typed {"type": "string", "format": "date-time"} by the schema'),
    );
}

/**
 * Now, in ms since the epoch, as expiries are read: never earlier than a time this process read before,
 * so that a clock set back does not bring expired rows back.
 */
export function expiryNow(): number {
  latest = Math.max(latest, Date.now());
  return latest;
}
let latest = 0;
