/**
 * The CPU one decode of a consent string costs a write, through the platform's adapter (the
 * IAB libraries under the adapter's time bound): a typical TC string and a typical GPP string,
 * each decoded many times, measured with `process.cpuUsage` (every thread of the process, so
 * the time bound's watchdog counts too). `npx tsx bench/decode-cost.ts`; a few seconds.
 */
import { ConsentStringDecoder } from "@cmp/core"
import { ConsentStringDecoderLive } from "@cmp/platform-node"
import * as Effect from "effect/Effect"

/** A TC string as a CMP writes it: purposes 1 to 3, service-specific, with its two optional segments. */
const TC = "CQdWToAQdWToAACABAENCCFgAOAAAAAAAAAAAAAAAAAA.IAAA.YAAAAAAAAAAA"
/** A GPP string as a CMP writes it: the TCF EU v2 and US national sections. */
const GPP = "DBACMMA~CQuZP8AQuZP8AACAAAENAAFgAMAAAAAAAAAAAAAAAAAA.IAAA.YAAAAAAAAAAA~CQAAAAAAAABA.QA"

const ITERATIONS = Number(process.env.ITERATIONS ?? 5_000)

const measure = (name: string, run: () => unknown) => {
  for (let i = 0; i < 200; i++) run()
  const start = process.cpuUsage()
  const wall = performance.now()
  for (let i = 0; i < ITERATIONS; i++) run()
  const used = process.cpuUsage(start)
  const micros = (used.user + used.system) / ITERATIONS
  const wallMicros = ((performance.now() - wall) * 1000) / ITERATIONS
  console.log(`${name.padEnd(12)} ${micros.toFixed(1).padStart(7)} µs CPU per decode (${wallMicros.toFixed(1)} µs wall), ${ITERATIONS} decodes`)
}

const decoder = Effect.runSync(Effect.provide(ConsentStringDecoder, ConsentStringDecoderLive()))
const tc = Effect.runSync(decoder.decodeTc(TC))
const gpp = Effect.runSync(decoder.decodeGpp(GPP))
if (tc._tag !== "Decoded" || gpp._tag !== "Decoded") throw new Error("the sample strings must decode")
measure("TC string", () => Effect.runSync(decoder.decodeTc(TC)))
measure("GPP string", () => Effect.runSync(decoder.decodeGpp(GPP)))
