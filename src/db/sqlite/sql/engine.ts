// SQLite's SQL of the engine: Knex's own tables, made so that processes starting at once never race.
/**
 * Knex's own tables for migrations, as Knex makes them on SQLite, and the one row of its lock: each
 * statement atomic, so that processes starting at once on one file never race to make them (index.ts).
 */
export const knexTablesSql = [
  `create table if not exists knex_migrations
    (id integer not null primary key autoincrement, name varchar(255), batch integer, migration_time datetime)`,
  'create table if not exists knex_migrations_lock (`index` integer not null primary key autoincrement, is_locked integer)',
  'insert into knex_migrations_lock (is_locked) select 0 where not exists (select 1 from knex_migrations_lock)',
];
