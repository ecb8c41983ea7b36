import { DnsLookupFailed, DnsRecords } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as dns from "node:dns"

export interface DnsRecordsOptions {
  /** Replaces the system resolver's `resolveTxt` (tests, a host's own resolver): each record as its chunks. */
  readonly resolveTxt?: ((name: string) => Promise<ReadonlyArray<ReadonlyArray<string>>>) | undefined
  /** How long one look-up may take (default 5000 ms). */
  readonly timeoutMs?: number | undefined
}

/** The answers that mean the name holds no TXT record, as opposed to a look-up that got no answer. */
const NO_RECORDS = new Set(["ENODATA", "ENOTFOUND", "NXDOMAIN"])

const codeOf = (e: unknown) =>
  typeof e === "object" && e !== null && typeof (e as { code?: unknown }).code === "string" ? (e as { code: string }).code : "ERROR"

/** TXT look-ups through the system's resolver (or the one handed in), bounded in time. */
export const dnsRecords = (options: DnsRecordsOptions = {}): typeof DnsRecords.Service => {
  const resolveTxt = options.resolveTxt ?? ((name: string) => dns.promises.resolveTxt(name))
  const timeoutMs = options.timeoutMs ?? 5_000
  return {
    txt: (name) =>
      Effect.tryPromise({ try: () => resolveTxt(name), catch: codeOf }).pipe(
        Effect.map((records) => records.map((chunks) => chunks.join(""))),
        Effect.catchAll((code) => NO_RECORDS.has(code) ? Effect.succeed([]) : Effect.fail(new DnsLookupFailed({ code }))),
        Effect.timeoutFail({ duration: timeoutMs, onTimeout: () => new DnsLookupFailed({ code: "ETIMEOUT" }) })
      )
  }
}

export const DnsRecordsLive = (options: DnsRecordsOptions = {}) => Layer.succeed(DnsRecords, dnsRecords(options))
