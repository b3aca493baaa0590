/**
 * DEIXIS_STORE picks where state lives: unset → a SQLite file (the embedded default);
 * `memory`; or a postgres:// URL (shared by many instances). The parser is the one every app
 * uses, `StoreConfig` of `@deixis/store-sql`; its default file is `.deixis/deixis.sqlite`
 * under the directory `pnpm start` was typed in (pnpm's INIT_CWD), or else the working directory.
 */
export { config, layer, layerMemory, type StoreChoice } from "@deixis/store-sql/StoreConfig"
