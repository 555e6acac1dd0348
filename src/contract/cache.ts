// The account's documents kept by their tag (`documentTag`), so that keys that see the same collections,
// end users whom the collections' rules grant alike, and requests between two changes of a schema or of
// the rules, share one document built once. The tag holds everything a document is built from, the
// caller's view of the rules included: a change makes a new tag, never a stale document.

/** What a `DocumentCache` keeps: by default the JSON text a route answers. */
export class DocumentCache<Document = string> {
  readonly #documents = new Map<string, Document>();

  /** `limit`: the most documents kept, the least recently used dropped first (default 100). */
  constructor(readonly limit = 100) {}

  /** The document of `tag`: the one kept for it, else what `build()` makes, kept from now on. */
  get(tag: string, build: () => Document): Document {
    let document = this.#documents.get(tag);
    if (document === undefined) {
      document = build();
      if (this.#documents.size >= this.limit) this.#documents.delete(this.#documents.keys().next().value!);
    } else this.#documents.delete(tag);
    this.#documents.set(tag, document);
    return document;
  }

  /** How many documents are kept. */
  get size(): number {
    return this.#documents.size;
  }
}
