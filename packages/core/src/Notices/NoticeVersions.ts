import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { KeptValues, readThrough } from "../Engine/KeptValues.js"

/** The text and version of a notice text content. */
export interface ContentVersion {
  readonly text_id: string
  readonly content_version: number
}

/**
 * The versions of notice text contents, kept in memory for a moment (`KeptValues`): a user's
 * consent state under a policy that re-collects on new wording compares the version its last
 * event names with the newest approved one of the text, on every read. A content written
 * through this process drops its text's copy after its commit; one through another process is
 * seen within `ttlMs` (a second).
 */
export interface NoticeVersionsService {
  /** The highest `content_version` of an approved content of a notice text, or none. */
  readonly latest: <E, R>(textId: string, load: Effect.Effect<number | undefined, E, R>) => Effect.Effect<number | undefined, E, R>
  /** The text and version of a content (what an approved content says never changes). */
  readonly content: <E, R>(
    contentId: string,
    load: Effect.Effect<ContentVersion | undefined, E, R>
  ) => Effect.Effect<ContentVersion | undefined, E, R>
  readonly forgetText: (textId: string) => Effect.Effect<void>
}

export class NoticeVersions extends Context.Tag("@cmp/core/NoticeVersions")<NoticeVersions, NoticeVersionsService>() {
  static readonly layer = (ttlMs = 1000, now?: () => number): Layer.Layer<NoticeVersions> =>
    Layer.sync(NoticeVersions, () => {
      const latest = new KeptValues<number | undefined>(ttlMs, now)
      const contents = new KeptValues<ContentVersion | undefined>(ttlMs, now)
      return {
        latest: (textId, load) => readThrough(latest, textId, load),
        content: (contentId, load) => readThrough(contents, contentId, load),
        forgetText: (textId) => Effect.sync(() => latest.forget(textId))
      }
    })
}
