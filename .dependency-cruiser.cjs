/**
 * Which package may import which (`pnpm check:deps`, run by CI). The layers, bottom up:
 * core (pure Effect) ← adapters (stores, webhooks, platform-node, privacy-center) ← platform (composition) ←
 * http-express, http-fetch (translation, composing platform with http) ← server. http (REST,
 * framework- and runtime-neutral) rests on core alone: the runtime and the docs page's files are
 * handed to it, so a host on any runtime or store gets no Node module and no store driver with it.
 * No adapter imports another, except platform-node using the webhooks package's guarded sender
 * for every outbound call. The store is the host's choice: platform and the HTTP packages take
 * it as a layer, and only server, which picks one from the environment, imports both.
 * privacy-center (the hosted pages rendered to HTML) rests on core alone, on any runtime, as http.
 * docs/architecture.md draws it.
 */
const allowed = {
  core: [],
  "store-sql": ["core"],
  "store-sqlite": ["core", "store-sql"],
  "store-postgres": ["core", "store-sql"],
  webhooks: ["core"],
  "platform-node": ["core", "webhooks"],
  platform: ["core", "platform-node", "webhooks", "privacy-center"],
  http: ["core"],
  "privacy-center": ["core"],
  "http-express": ["http", "platform"],
  "http-fetch": ["http", "platform"],
  server: ["core", "platform", "http-express", "store-sqlite", "store-postgres"],
  "test-support": ["core"]
}
const packages = Object.keys(allowed)

/**
 * The folders of core, bottom up: each may import the ones before it, never one after it. Domain
 * holds the schemas every feature shares; Engine the declaration machinery (resources, actions,
 * the service that runs them, queries, cursors, principals, the ports every feature uses); then
 * one folder per feature. The files at core/src's root (index, Registry, PlatformServices) are
 * the composition: they may import every folder, and no folder imports them.
 */
const coreFolders = ["Domain", "Engine", "Operations", "Webhooks", "Accounts", "Properties", "Analytics", "Notices", "Consents", "Exports", "Sessions"]

module.exports = {
  forbidden: [
    ...packages.map((name) => ({
      name: `${name}-imports-only-its-layers`,
      comment: `packages/${name} may import only: ${allowed[name].join(", ") || "effect"}`,
      severity: "error",
      from: { path: `^packages/${name}/src/` },
      to: {
        path: `^packages/(?!(?:${[name, ...allowed[name]].join("|")})/)[^/]+/`
      }
    })),
    {
      name: "core-imports-only-effect",
      comment: "core is pure Effect: no Node built-ins, no other library",
      severity: "error",
      from: { path: "^packages/core/src/" },
      to: { dependencyTypes: ["core", "npm", "npm-dev", "npm-peer", "npm-optional", "npm-no-pkg", "npm-unknown"], pathNot: "node_modules/effect/" }
    },
    ...coreFolders.map((folder, level) => ({
      name: `core-${folder.toLowerCase()}-imports-only-below`,
      comment: `core/src/${folder} may import only ${coreFolders.slice(0, level).join(", ") || "effect"} and itself: the folders of core are layered (coreFolders)`,
      severity: "error",
      from: { path: `^packages/core/src/${folder}/` },
      to: { path: `^packages/core/src/(?!(?:${coreFolders.slice(0, level + 1).join("|")})/)` }
    })),
    {
      name: "http-imports-no-node-builtin",
      comment: "http runs on any runtime (Deno, Bun, edge hosts): Node's modules belong to the adapters",
      severity: "error",
      from: { path: "^packages/http/src/" },
      to: { dependencyTypes: ["core"] }
    },
    {
      name: "http-imports-only-effect-and-qs",
      comment: "http's libraries run on any runtime; a host's framework or driver belongs to the adapters",
      severity: "error",
      from: { path: "^packages/http/src/" },
      to: { dependencyTypes: ["npm", "npm-dev", "npm-peer", "npm-optional", "npm-no-pkg", "npm-unknown"], pathNot: "node_modules/(effect|qs)/" }
    },
    {
      name: "privacy-center-imports-no-node-builtin",
      comment: "the privacy center renders on any runtime, as http runs: no Node module",
      severity: "error",
      from: { path: "^packages/privacy-center/src/" },
      to: { dependencyTypes: ["core"] }
    },
    {
      name: "privacy-center-imports-only-its-renderers",
      comment: "the privacy center's libraries run on any runtime: effect, the templates (preact, preact-render-to-string) and the Markdown parser (markdown-it)",
      severity: "error",
      from: { path: "^packages/privacy-center/src/" },
      to: {
        dependencyTypes: ["npm", "npm-dev", "npm-peer", "npm-optional", "npm-no-pkg", "npm-unknown"],
        pathNot: "node_modules/(effect|preact|preact-render-to-string|markdown-it)/"
      }
    },
    {
      name: "store-is-the-hosts-choice",
      comment:
        "platform and the HTTP packages take the store a host hands in (`sqlite(…)` from @cmp/store-sqlite, `postgres(…)` from @cmp/store-postgres): importing one would install its driver, and a native build, for every host",
      severity: "error",
      from: { path: "^packages/(?:platform|http|http-fetch|http-express)/src/" },
      to: { path: "(?:^packages/store-|node_modules/@cmp/store-|node_modules/(?:better-sqlite3|pg|@effect/sql-sqlite-node|@effect/sql-pg)/)" }
    },
    {
      name: "no-cycles",
      comment: "an import cycle, in any package",
      severity: "error",
      from: { path: "^packages/" },
      to: { circular: true }
    },
    {
      name: "no-dev-dependency-in-src",
      comment: "what a package's sources import must be a dependency, not a devDependency",
      severity: "error",
      from: { path: "^packages/[^/]+/src/" },
      to: { dependencyTypes: ["npm-dev"] }
    },
    {
      name: "no-undeclared-package",
      comment: "a package imported by sources must be in the package's package.json",
      severity: "error",
      from: { path: "^packages/[^/]+/src/" },
      to: { dependencyTypes: ["npm-no-pkg", "npm-unknown"] }
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      from: { path: "^packages/[^/]+/src/" },
      to: { couldNotResolve: true }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^packages/server/lib/|(^|/)(dist|test|test-faults)/" },
    tsPreCompilationDeps: true,
    combinedDependencies: false,
    tsConfig: { fileName: "tsconfig.base.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default", "types"], extensions: [".ts", ".tsx", ".js", ".mjs", ".json"] }
  }
}
