import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { answers, defineAction } from "../Engine/Action.js"
import { Forbidden } from "../Domain/Errors.js"
import type { Principal } from "../Engine/Principal.js"
import { loadVisible } from "../Engine/Reads.js"
import { type LookUp } from "../Engine/Shape.js"
import { tcChoicesOf, TcStringEncoder } from "../Notices/Notices.js"
import { ConsentEventsResource } from "./Events.js"

/** `GET consents/events/:id/tcstring`: the event's choices as a TC string, encoded by the server. */
export const tcStringOfEvent = (principal: Principal, id: string, at: LookUp = {}) =>
  Effect.gen(function*() {
    if (!ConsentEventsResource.methods.includes("get")) return yield* Effect.fail(new Forbidden({ message: "not allowed" }))
    const event = yield* loadVisible(ConsentEventsResource, principal, id, at)
    const encoder = yield* TcStringEncoder
    const tc_string = yield* encoder.encode(tcChoicesOf(event))
    return { id: event.id, tc_string }
  })

/** The answer of `GET consents/events/:id/tcstring`. */
export const TcStringOutput = Schema.Struct({ id: Schema.String, tc_string: Schema.String })

export const TcStringAction = defineAction({
  place: "consents/events",
  name: "tcstring",
  method: "GET",
  path: "consents/events/:id/tcstring",
  summary: "The event's choices as an IAB TCF v2 TC string, encoded by the server",
  auth: "bearer",
  query: "lookUp",
  answers: answers.schema("TcString", TcStringOutput),
  status: 200,
  target: (request) => ({ def: ConsentEventsResource, id: request.id }),
  // The consents API (`/v1/consents/…`) is outside `api_requests`.
  countsApiRequests: false,
  run: (principal, request) => tcStringOfEvent(principal, request.id, request.at)
})
