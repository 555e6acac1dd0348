// Patches of rows (openapi.yaml, updateRow and updateRows; docs/patches.md): read from a request in one
// of three formats, chosen by its Content-Type, and applied to a row in the write's own transaction.
import type { operations } from '../../generated/openapi.ts';
import type { PatchFormat } from './read.ts';

export { applyPatch } from './apply.ts';
export { type Patch, type PatchFormat, patchedFields, readPatch, topField } from './read.ts';

/** The media types openapi.yaml lists for the body of a PATCH of rows (updateRow and updateRows alike). */
export type PatchMediaType = keyof operations['updateRow']['requestBody']['content'] &
  keyof operations['updateRows']['requestBody']['content'];

/**
 * The format of each media type a PATCH of rows takes (RFC 7396 §4, RFC 6902 §6), keyed by the media
 * types openapi.yaml lists for updateRow, so that one renamed there breaks the build.
 */
export const patchFormatOf: Readonly<Record<PatchMediaType, PatchFormat>> = {
  'application/json': 'merge',
  'application/merge-patch+json': 'merge-patch',
  'application/json-patch+json': 'json-patch',
};

/** Accept-Patch (RFC 5789 §3.1): the media types a row's PATCH takes. */
export const ACCEPT_PATCH = Object.keys(patchFormatOf).join(', ');
