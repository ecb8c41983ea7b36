import { PlatformConfig, type StoreLayer } from "@cmp/platform"
import { type PgStore, postgres } from "@cmp/store-postgres"
import { type SqliteStore, sqlite } from "@cmp/store-sqlite"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as path from "node:path"

/**
 * Which store `pnpm start`, `worker` and `bootstrap` open, from the environment: PostgreSQL when
 * `DATABASE_URL` is set, else SQLite at `SQLITE_PATH`. Here rather than in the platform, which
 * takes the store its host hands in: only the server installs both.
 */

export type StoreSettings =
  | { readonly _tag: "sqlite"; readonly options: SqliteStore.SqliteStoreOptions }
  | { readonly _tag: "postgres"; readonly options: PgStore.PgStoreOptions }

export const settings: Config.Config<StoreSettings> = Config.all({
  url: PlatformConfig.trimmed("DATABASE_URL"),
  poolSize: PlatformConfig.integer("DATABASE_POOL_SIZE", 10, 1, 1000),
  sqlitePath: Config.map(PlatformConfig.raw("SQLITE_PATH"), Option.getOrElse(() => "./data/consent.db")),
  base: PlatformConfig.baseDirectory
}).pipe(Config.mapOrFail(({ base, poolSize, sqlitePath, url }): Either.Either<StoreSettings, ConfigError.ConfigError> => {
  // `:memory:` is SQLite's in-memory database, not a file name to resolve.
  if (Option.isNone(url)) {
    return Either.right({ _tag: "sqlite", options: { filename: sqlitePath === ":memory:" ? sqlitePath : path.resolve(base, sqlitePath) } })
  }
  if (!/^postgres(ql)?:\/\//.test(url.value)) {
    return Either.left(ConfigError.InvalidData(["DATABASE_URL"], "DATABASE_URL must be a postgres:// or postgresql:// URL"))
  }
  return Either.right({ _tag: "postgres", options: { url: url.value, maxConnections: poolSize } })
}))

/** The storage ports the settings name. */
export const layer = (store: StoreSettings): StoreLayer =>
  store._tag === "sqlite" ? sqlite(store.options) : postgres(store.options)

/** The store from the environment, for `Platform.layerConfig({ store })`. */
export const fromConfig: Config.Config<StoreLayer> = Config.map(settings, layer)
