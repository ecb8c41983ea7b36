import type { Principal } from "@cmp/core"

/** Who a call acts as; made by `asOrganization` or `asOperator`, never by hand. */
export class Actor {
  // A private field makes the class nominal: an object that merely looks like an actor is not
  // one, to the compiler or to the tree (`instanceof`), so a caller cannot name a principal.
  readonly #madeByPlatform = true
  constructor(readonly principal: Principal) {}
}
