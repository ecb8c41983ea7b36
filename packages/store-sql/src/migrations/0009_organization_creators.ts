import { addColumn, createIndex, migration, text } from "../Ddl.js"

/**
 * The person who created a self-registered organization, counted against
 * `ORGANIZATIONS_PER_PERSON`. Organizations created earlier keep it empty (they are not counted).
 */
export default migration([
  addColumn("organizations", "created_by_person_id", text()),
  createIndex("organizations", "organizations_created_by_person", ["created_by_person_id"])
])
