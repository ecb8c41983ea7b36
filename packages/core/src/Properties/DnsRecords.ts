import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"

/** A look-up that got no answer (a timeout, a server failure): not the same as a name without records. */
export class DnsLookupFailed extends Data.TaggedError("DnsLookupFailed")<{
  /** The resolver's code (`ETIMEOUT`, `ESERVFAIL`, …), which names no person. */
  readonly code: string
}> {}

/**
 * The DNS records the platform reads: a page host's proof is a TXT record its holder publishes.
 * A host hands in its resolver (tests, a resolver of its own); `platform-node` asks the system's.
 */
export class DnsRecords extends Context.Tag("@cmp/core/DnsRecords")<
  DnsRecords,
  {
    /** The TXT records at `name`, each one string (its chunks joined); none when the name has none or does not exist. */
    readonly txt: (name: string) => Effect.Effect<ReadonlyArray<string>, DnsLookupFailed>
  }
>() {}
