import { PlatformConfig } from "@cmp/platform"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as path from "node:path"
import { createSecureContext as tlsContext } from "node:tls"
import * as StoreConfig from "./StoreConfig.js"

/**
 * What `pnpm start` needs beyond the platform: where and how it listens. Read through Effect
 * `Config` like the platform's settings, with the variables of docs/configuration.md.
 */

/** PEM text as given, or the file a path names (relative to the directory the command was started from). */
const pem = (name: string, value: string, base: string): Either.Either<string, ConfigError.ConfigError> => {
  if (value.includes("-----BEGIN")) return Either.right(value)
  try {
    return Either.right(fs.readFileSync(path.resolve(base, value), "utf8"))
  } catch (e) {
    return Either.left(ConfigError.InvalidData([name], `${name} must be PEM text or a readable file: ${e instanceof Error ? e.message : String(e)}`))
  }
}

const tls = Config.all({
  cert: PlatformConfig.trimmed("TLS_CERT"),
  key: PlatformConfig.trimmed("TLS_KEY"),
  base: PlatformConfig.baseDirectory
}).pipe(Config.mapOrFail(({ base, cert, key }) => {
  if (Option.isNone(cert) && Option.isNone(key)) return Either.right(undefined)
  if (Option.isNone(cert) || Option.isNone(key)) {
    return Either.left(ConfigError.InvalidData(["TLS_CERT"], "TLS_CERT and TLS_KEY must be set together"))
  }
  return Either.flatMap(Either.all({ cert: pem("TLS_CERT", cert.value, base), key: pem("TLS_KEY", key.value, base) }), usable)
}))

/**
 * A certificate and key that TLS can serve with, checked here so that a wrong file, a truncated
 * PEM or a key of another certificate is a configuration error naming them, not OpenSSL's words
 * from deep inside the listen.
 */
const usable = (pems: { readonly cert: string; readonly key: string }): Either.Either<typeof pems, ConfigError.ConfigError> => {
  try {
    tlsContext(pems)
    return Either.right(pems)
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e)
    return Either.left(ConfigError.InvalidData(["TLS_CERT"], `TLS_CERT and TLS_KEY must be a PEM certificate chain and its private key: ${reason}`))
  }
}

/**
 * `TRUST_PROXY`: how many proxies are in front, `true` meaning one and `false` none. A count,
 * because the client address is the one the farthest of them appended to `X-Forwarded-For`.
 */
const trustProxy = Config.mapOrFail(PlatformConfig.trimmed("TRUST_PROXY"), (o): Either.Either<number, ConfigError.ConfigError> => {
  if (Option.isNone(o)) return Either.right(0)
  const v = o.value.toLowerCase()
  if (v === "true") return Either.right(1)
  if (v === "false") return Either.right(0)
  return /^\d{1,2}$/.test(v)
    ? Either.right(Number(v))
    : Either.left(ConfigError.InvalidData(["TRUST_PROXY"], `TRUST_PROXY must be true, false or the number of proxies in front (0, 1, 2, ...), got '${o.value}'`))
})

/** An integer setting left to the API's own default (undefined) when unset. */
const apiInteger = (name: string, min: number) =>
  Config.map(
    Config.all([PlatformConfig.trimmed(name), PlatformConfig.integer(name, min, min)]),
    ([set, value]) => (Option.isSome(set) ? value : undefined)
  )

export const server = Config.all({
  port: PlatformConfig.integer("PORT", 3000, 0, 65535),
  host: Config.map(PlatformConfig.trimmed("HOST"), Option.getOrElse(() => "127.0.0.1")),
  allowHttp: PlatformConfig.flag("ALLOW_HTTP", false),
  trustProxy,
  bodyTimeoutMs: apiInteger("BODY_TIMEOUT_MS", 1),
  // At least one body of the largest size a route takes by default must fit.
  bodyMemoryLimit: apiInteger("BODY_MEMORY_LIMIT", 1024 * 1024),
  tls,
  logLevel: PlatformConfig.logLevel,
  metricsToken: PlatformConfig.metricsToken,
  store: StoreConfig.settings
})

export type ServerSettings = Config.Config.Success<typeof server>

/**
 * A command's own settings read together with the platform's, which the platform's layer reads
 * again when it is built: a start with several mistakes names them all at once, not only those of
 * whichever part happens to be read first.
 */
export const withPlatform = <A>(own: Config.Config<A>): Config.Config<A> =>
  Config.map(Config.all([own, PlatformConfig.platform, PlatformConfig.inServerDispatcher]), ([settings]) => settings)
