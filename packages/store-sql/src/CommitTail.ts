import * as Context from "effect/Context"

/**
 * Statements a PostgreSQL transaction sends in the same message as its COMMIT, in the order
 * given, handed over by work that runs before it commits (`UnitOfWork.beforeCommit`). Present
 * only while that work runs in a transaction that can take them. They are plain SQL text (a
 * message that carries several statements has no parameters): what is added is written with
 * `literal`. If one fails, the transaction is rolled back and does not commit.
 */
export class CommitTail extends Context.Tag("@cmp/store-sql/CommitTail")<CommitTail, Array<string>>() {}

/**
 * A string as a PostgreSQL literal: quotes doubled, and where it holds a backslash the `E''`
 * form with backslashes doubled too, so it reads the same whatever `standard_conforming_strings`
 * says (the form `pg`'s `escapeLiteral` writes).
 */
export const literal = (value: string): string => {
  const quoted = value.replace(/'/g, "''")
  return value.includes("\\") ? `E'${quoted.replace(/\\/g, "\\\\")}'` : `'${quoted}'`
}
