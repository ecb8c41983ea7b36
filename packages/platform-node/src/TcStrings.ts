import { InvalidInput, TcStringEncoder } from "@cmp/core"
import { GVL, TCModel, TCString } from "@iabtechlabtcf/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export interface TcfOptions {
  /** The IAB Global Vendor List (JSON of vendor-list.json) the strings are encoded against. */
  readonly vendorList?: object | undefined
  /** The CMP id registered with IAB Europe, and its version. */
  readonly cmpId?: number | undefined
  readonly cmpVersion?: number | undefined
}

/**
 * Encodes a consent event's choices as an IAB TCF v2 TC string with `@iabtechlabtcf/core`.
 * Without a vendor list the service answers 400 rather than inventing one.
 */
export const TcStringEncoderLive = (options: TcfOptions = {}) =>
  Layer.succeed(TcStringEncoder, {
    encode: (choices) =>
      Effect.suspend(() => {
        if (!options.vendorList) {
          return Effect.fail(new InvalidInput({
            message: "TC strings are not available: the server has no TCF vendor list configured",
            errors: { tc_string: "no TCF vendor list configured" }
          }))
        }
        return Effect.try({
          try: () => {
            const gvl = new GVL(structuredClone(options.vendorList) as never)
            const model = new TCModel(gvl)
            model.cmpId = options.cmpId ?? 2
            model.cmpVersion = options.cmpVersion ?? 1
            model.isServiceSpecific = true
            model.purposeConsents.set([...choices.purposeConsents])
            model.purposeLegitimateInterests.set([...choices.purposeLegitimateInterests])
            model.vendorConsents.set([...choices.vendorConsents])
            model.vendorLegitimateInterests.set([...choices.vendorLegitimateInterests])
            model.created = new Date(choices.created)
            model.lastUpdated = new Date(choices.created)
            return TCString.encode(model)
          },
          catch: (e) =>
            new InvalidInput({
              message: `The event cannot be encoded as a TC string: ${String((e as Error)?.message ?? e)}`,
              errors: { tc_string: "cannot be encoded" }
            })
        })
      })
  })
