import { Common, defineAction, defineResource, field, type HostMigration, ResourceService, answers } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/**
 * A resource and an action a host declares of its own, for the suites that serve them beside the
 * registry's (`createPlatform({ resources, actions, migrations })`, the server's options): team
 * notes, owned by an organization, with a count quota of their own and their table's migrations.
 */

const Note = Schema.Struct({ id: Common.Id, title: Schema.String, pinned: Schema.Boolean, ...Common.Audit })

/** The most notes each organization may have, which a test sets; none: no limit. */
export const noteLimits = new Map<string, number>()

export const NotesResource = defineResource({
  name: "note",
  path: "team-notes",
  table: "team_notes",
  output: Note,
  createInput: Schema.Struct({ organization_id: Common.Id, title: Schema.String, pinned: Schema.optional(Schema.Boolean) }),
  updateInput: Schema.Struct({ title: Schema.String, pinned: Schema.Boolean }),
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  privateFields: { organization_id: field.string },
  queryable: ["organization_id"],
  defaults: { pinned: false },
  indexes: [{ name: "team_notes_organization", columns: ["organization_id", "created_at"] }],
  quota: { name: "team_notes", limit: (organizationId) => Effect.sync(() => noteLimits.get(organizationId)) }
})

/** `POST /v1/team-notes/:id/pin`, `cmp.teamNotes.pin(id, { as })`: a note pinned, as its owner may patch it. */
export const PinNoteAction = defineAction({
  place: "team-notes",
  name: "pin",
  method: "POST",
  path: "team-notes/:id/pin",
  summary: "Pin a note",
  auth: "bearer",
  answers: answers.outputOf(NotesResource),
  status: 200,
  target: (request) => ({ def: NotesResource, id: request.id }),
  run: (principal, request) => ResourceService.patch(NotesResource, principal, request.id, { pinned: true }, request.at)
})

/** The two migrations of the notes' table, in SQL: the table, then its index, each once. */
export const notesMigrations: Readonly<Record<string, HostMigration>> = {
  "0001_team_notes": {
    sqlite: [
      `CREATE TABLE team_notes (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, title TEXT NOT NULL,
        pinned INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, version INTEGER NOT NULL)`
    ],
    postgres: [
      `CREATE TABLE team_notes (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, title TEXT NOT NULL,
        pinned BOOLEAN NOT NULL, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, version INTEGER NOT NULL)`
    ]
  },
  "0002_team_notes_organization": ["CREATE INDEX team_notes_organization ON team_notes (organization_id, created_at)"]
}

/** What a host hands the platform (`createPlatform`, `startServer`, the server's `serve`). */
export const notes = { resources: [NotesResource], actions: [PinNoteAction], migrations: notesMigrations }
