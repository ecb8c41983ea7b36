import { FeatureCache, forgetFeatures } from "./FeatureCache.js"
import * as Effect from "effect/Effect"
import {
  premiumFeatureFlags,
  PremiumFeature,
  PremiumFeatureCreate,
  PremiumFeatureUpdate,
  Quota,
  QuotaCreate,
  quotaFields,
  QuotaUpdate
} from "../Domain/Account.js"
import { defineResource } from "../Engine/Resource.js"
import { Settings } from "../Engine/Settings.js"


export const QuotasResource = defineResource({
  name: "quota",
  path: "quotas",
  table: "quotas",
  indexes: [],
  output: Quota,
  createInput: QuotaCreate,
  updateInput: QuotaUpdate,
  methods: ["find", "get", "create", "patch"],
  operatorOnly: ["create", "patch"],
  ownerField: "organization_id",
  unique: [["organization_id"]],
  hooks: {
    create: (_p, row, input) =>
      Effect.map(Settings, (s) => {
        const out = { ...row }
        for (const k of quotaFields) if (input[k] === undefined) out[k] = s.defaultQuotas[k]
        return { row: out }
      })
  }
})

export const PremiumFeaturesResource = defineResource({
  name: "premium feature set",
  path: "premium-features",
  table: "premium_features",
  indexes: [],
  output: PremiumFeature,
  createInput: PremiumFeatureCreate,
  updateInput: PremiumFeatureUpdate,
  methods: ["find", "get", "create", "update", "patch"],
  operatorOnly: ["create", "update", "patch"],
  ownerField: "organization_id",
  unique: [["organization_id"]],
  defaults: Object.fromEntries(premiumFeatureFlags.map((f) => [f, false])),
  ports: [FeatureCache],
  hooks: { afterCommit: (output) => forgetFeatures(output.organization_id) }
})
