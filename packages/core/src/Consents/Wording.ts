import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { InvalidInput } from "../Domain/Errors.js"
import { Storage } from "../Engine/Ports.js"
import { NoticeTextContentsResource } from "../Notices/Notices.js"

/** The wording an event names must be an approved content of its organization. */
export const requireApprovedContent = (organizationId: string, contentId: string | null | undefined) =>
  contentId === undefined || contentId === null ? Effect.void : Effect.gen(function*() {
    const found = yield* Effect.flatMap(Storage, (s) => s.repository(NoticeTextContentsResource.tableDef).get(contentId))
    if (Option.isNone(found) || found.value.organization_id !== organizationId || found.value.status !== "approved") {
      return yield* Effect.fail(new InvalidInput({
        message: "Invalid notice_text_content_id: it names no approved notice text content of this organization",
        errors: { notice_text_content_id: "names no approved notice text content of this organization" }
      }))
    }
  })
