// The allowed imports of src/ (docs/development.md, "Layout"), checked by `npm run lint`: a wrong arrow
// fails with the rule's name and its comment. The layers, outermost first: the HTTP app and the feed
// (app.ts, http/, handlers/, ws/, the console's server side), the workers and the meter (webhooks/,
// usage/), then the data layer (db/): its areas (db/<area>/), its engine (db/engine/) and one folder per
// dialect (db/sqlite/, db/postgres/). Rules that hold no SQL live outside db/, where both sides import them
// (rules-import-no-db).
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A circle of imports has no first module to read: break it by moving what both need into a module of its own.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'db-imports-no-outer-layer',
      severity: 'error',
      comment: 'The data layer is called, never calls out: nothing in db/ imports the HTTP app, the handlers, the feed, the workers or the CLI.',
      from: { path: '^src/db/' },
      to: {
        path: '^src/(app|server|cli|pruner|sweeper)\\.ts$|^src/(http|handlers|feed|webhooks|cli|console|docs|usage)/',
        // The calendar periods of plans are a rule both sides share (rules-import-no-db), not the meter.
        pathNot: '^src/usage/periods\\.ts$',
      },
    },
    {
      name: 'rules-import-no-db',
      severity: 'error',
      comment:
        'The rules that hold no SQL (the query rules, the words of a search, key hashing and scopes, idempotency answers, schemas, patches, the rules of collections, a time to live, the errors, rows as JSON text, date-times, plan periods) are imported by both the data layer and the HTTP side, so they import nothing of db/: a rule that did would tie the HTTP side to the data layer through it, and could not be read or tested without a database.',
      from: { path: '^src/(query|api-keys|idempotency|schema|patches|rules|search|expiry)/|^src/(errors|rows|date-time)\\.ts$|^src/usage/periods\\.ts$' },
      to: { path: '^src/db/' },
    },
    {
      name: 'dialects-apart',
      severity: 'error',
      comment: "A dialect's folder imports nothing of another dialect's.",
      from: { path: '^src/db/(sqlite|postgres)/' },
      to: { path: '^src/db/(sqlite|postgres)/', pathNot: '^src/db/$1/' },
    },
    {
      name: 'dialects-only-through-the-store-opener',
      severity: 'error',
      comment:
        'Only the opening of a store (db/open-store.ts) chooses a dialect; the engine, the areas and everything outside db/ call the Dialect or the Store.',
      from: { path: '^src/', pathNot: '^src/db/(open-store\\.ts$|sqlite/|postgres/)' },
      to: { path: '^src/db/(sqlite|postgres)/' },
    },
    {
      name: 'engine-below-the-areas',
      severity: 'error',
      comment:
        "The engine (db/engine/) is the ground: how we talk to a database, the ports each dialect answers (dialect.ts, port.ts, read-port.ts), grouping, errors. It knows no area's code (but the types the port names); what binds the areas into the Store sits above them (db/store.ts, db/open-store.ts).",
      from: { path: '^src/db/engine/' },
      to: {
        path: '^src/db/(accounts|auth|collections|rows|rules|reads|relations|search|events|webhooks|declarations|expiry|sqlite|postgres)/|^src/db/(store|open-store)\\.ts$',
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'dialects-below-the-areas',
      severity: 'error',
      comment:
        "A dialect (db/sqlite/, db/postgres/) holds its SQL, its connections, its errors and how it writes, and answers the engine's ports (engine/dialect.ts, port.ts, read-port.ts): of db/ it imports the engine (the SQL both dialects share, engine/sql/, included) and itself, nothing else, not even a type. An operation is its area's, written once above the ports; the steps of a write its strategy takes inside its statements (a collection's counters, events, words) and the store's caches (schemas, sort indexes known) are given to it as it opens (engine/dialect.ts, AreaParts).",
      from: { path: '^src/db/(sqlite|postgres)/' },
      to: { path: '^src/db/', pathNot: '^src/db/(engine|$1)/' },
    },
    {
      name: 'shared-sql-below-the-areas',
      severity: 'error',
      comment:
        "The SQL both dialects share (db/engine/sql/): the statements they run as they are, and the builders they write alike (template.ts, filter.ts, pages.ts), each dialect giving what differs. The areas and the dialects import it; it imports the rest of the engine and itself, nothing of an area, not even a type.",
      from: { path: '^src/db/engine/sql/' },
      to: { path: '^src/db/', pathNot: '^src/db/engine/' },
    },
    {
      name: 'drivers-only-in-dialects',
      severity: 'error',
      comment: "A database driver is spoken to only in its dialect's folder, where its errors are read (errors.ts).",
      from: { path: '^src/', pathNot: '^src/db/(sqlite|postgres)/' },
      to: { path: '^node_modules/(sqlite3|pg|pg-[a-z-]+)/' },
    },
    {
      name: 'handlers-not-the-http-stages',
      severity: 'error',
      comment: 'A handler takes the validated request and answers { status, body }: it imports no stage of the request path but the helpers of requests.',
      from: { path: '^src/handlers/' },
      to: { path: '^src/app\\.ts$|^src/server\\.ts$' },
    },
    {
      name: 'console-page-apart',
      severity: 'error',
      comment:
        "The console's page (src/console/, but files.ts, which serves it) runs in the browser: it imports itself, generated/'s types and the query rules that hold no SQL (src/query/), and nothing of the server.",
      from: { path: '^src/console/', pathNot: '^src/console/files\\.ts$' },
      to: { path: '^src/', pathNot: '^src/(console|query)/' },
    },
    {
      name: 'console-served-by-files',
      severity: 'error',
      comment: "The server reaches the console's page only through src/console/files.ts, which bundles and serves it.",
      from: { path: '^src/', pathNot: '^src/console/' },
      to: { path: '^src/console/', pathNot: '^src/console/files\\.ts$' },
    },
    {
      name: 'not-to-tests',
      severity: 'error',
      comment: 'The service never imports its tests or benchmarks.',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
