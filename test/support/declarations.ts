// A declaration of an app's model (docs/declarations.md) the declaration tests plan and apply: two related
// collections with a schema, indexes, a search index and rules, an issuer whose secret is in APP_JWT_SECRET,
// and a webhook to a private address (the test servers allow them).
export const APP_JWT_SECRET = 'k'.repeat(40);

export const declared = `# the app's model
version: 1
collections:
  people:
    schema:
      type: object
      properties:
        name: {type: string}
        email: {type: string}
        tags: {type: array}
    indexes:
      - fields: [email]
        unique: true
      - fields: [name]
    search: {fields: [name, tags]}
    rules:
      read: true
      create: authenticated
  posts:
    relations:
      author: {field: author_id, collection: people, on_delete: cascade, reverse: posts}
    indexes:
      - fields: [created, author_id]
issuers:
  app:
    issuer: https://issuer.example
    audiences: [rowbase]
    secret: {env: APP_JWT_SECRET}
webhooks:
  - url: http://127.0.0.1:9/hook
    collections: [posts]
    events: [insert]
    description: new posts
`;
