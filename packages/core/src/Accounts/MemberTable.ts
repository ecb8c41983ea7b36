import { Member, MemberCreate, MemberUpdate } from "../Domain/Account.js"
import { declareResource } from "../Engine/Resource.js"

/** Members are invitations of persons into organizations (the invite flow is its own module). */
export const Members = declareResource({
  name: "member",
  path: "members",
  table: "members",
  indexes: [
    { name: "members_user", columns: ["user_id"] },
    { name: "members_organization", columns: ["organization_id", "created_at"] }
  ],
  output: Member,
  createInput: MemberCreate,
  updateInput: MemberUpdate,
  methods: ["find", "get", "create", "patch", "remove"],
  ownerField: "organization_id",
  transient: ["invitation"],
  // The invitation token in the answer to an invite opens a session.
  revealsCredentials: "create",
  unique: [["organization_id", "user_id"]],
  defaults: { authentication_method: "email_password", saml_active: false, role_id: null }
})
