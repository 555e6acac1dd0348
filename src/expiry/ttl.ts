// A collection's time to live (openapi.yaml, the `expiry` tag; docs/expiry.md): what its field may be
// against the collection's schema, and the clock expiries are read by. Both sides of the data layer use it.
import { validationFailed } from '../errors.ts';

/** A collection's time to live as openapi.yaml's `Ttl` says it. */
export interface Ttl {
  field: string;
}

/**
 * 400 when the collection's schema (`schema`, undefined for none) cannot hold an RFC 3339 date-time in
 * the top-level `field`: it types the field as anything but a `date-time` string (`null` beside it
 * allowed), or forbids other properties and does not name it. `refused` says what the 400 refuses: the
 * time to live (`ttl`, default: its errors name `/field`), or a schema set while the collection has one
 * (`schema`: they name the schema's keyword that leaves the field no date-time).
 */
export function checkTtlField(field: string, schema: Record<string, unknown> | undefined, refused: 'ttl' | 'schema' = 'ttl'): void {
  if (!schema) return;
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  const property = Object.hasOwn(properties, field) ? properties[field] : undefined;
  if (property === undefined) {
    const forbidding = ['additionalProperties', 'unevaluatedProperties'].find((keyword) => schema[keyword] === false);
    if (forbidding)
      throw refusal(
        refused,
        `The collection's schema allows no field ${field}: its rows could never expire.`,
        { name: '/field', message: 'is not among the properties of a schema that forbids others' },
        { name: `/${forbidding}`, message: `forbids ${field}, the field of the collection's time to live: name it among the properties` },
      );
    return;
  }
  const typed = property as { type?: unknown; format?: unknown };
  const types = Array.isArray(typed.type) ? typed.type : [typed.type];
  const dateTime = typed.format === 'date-time' && types.includes('string') && types.every((type) => type === 'string' || type === 'null');
  if (!dateTime)
    throw refusal(
      refused,
      `The collection's schema types field ${field} as something other than a date-time string.`,
      { name: '/field', message: 'must be typed {"type": "string", "format": "date-time"} by the schema' },
      {
        name: `/properties/${field}`,
        message: `is the field of the collection's time to live: must be {"type": "string", "format": "date-time"} (null beside it allowed), or remove the time to live first`,
      },
    );
}

/** The 400 of checkTtlField, its one error the one of what is refused. */
function refusal(refused: 'ttl' | 'schema', detail: string, ofTtl: Pointed, ofSchema: Pointed) {
  const { name, message } = refused === 'ttl' ? ofTtl : ofSchema;
  const said = refused === 'ttl' ? detail : `${detail} It is the field of the collection's time to live (docs/expiry.md).`;
  return validationFailed(said, [{ in: 'body', name, message }]);
}

/** An error's place in the request's body, and what is wrong there. */
type Pointed = { name: string; message: string };

/**
 * Now, in ms since the epoch, as expiries are read, by every read and write of rows and by the sweeper:
 * never earlier than a time this process read before, nor than a mark it was raised to (raiseExpiryNow),
 * so that a clock set back does not bring expired rows back (docs/expiry.md, "A clock set back").
 */
export function expiryNow(): number {
  latest = Math.max(latest, Date.now());
  return latest;
}
let latest = 0;

/** Makes expiryNow() answer `mark` (ms since the epoch) at least from now on: the latest the database keeps. */
export function raiseExpiryNow(mark: number): void {
  latest = Math.max(latest, mark);
}
