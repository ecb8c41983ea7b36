import { sqlite } from "@cmp/store-sqlite"
import { type ConsentPlatformApi, createPlatform, type PlatformOptions } from "../src/index.js"

/** A platform on an in-memory SQLite, cheap hashing, no log, no dispatcher, unless the overrides say otherwise. */
export const testPlatform = (overrides: Partial<PlatformOptions> = {}): Promise<ConsentPlatformApi> =>
  createPlatform({ store: sqlite({ filename: ":memory:" }), hashCost: 1024, logLevel: "None", dispatcher: false, ...overrides })

/** A new organization, made by the operator, with these premium features switched on. */
export const organizationIn = async (cmp: ConsentPlatformApi, name: string, features: Record<string, boolean> = {}) => {
  const as = cmp.asOperator()
  const org = await cmp.organizations.create({ name }, { as })
  if (Object.keys(features).length > 0) {
    const flags = await cmp.premiumFeatures.find({ organization_id: org.id }, { as })
    await cmp.premiumFeatures.patch(flags.data[0]!.id, features, { as })
  }
  return org
}
