/**
 * Core's engine on a real store: the suites each store package registers on itself (core's own
 * tests cannot open a store, since every store depends on core), and the doubles they run with.
 */
export * from "./EngineServices.js"
export { exportRunSuite } from "./ExportRunSuite.js"
export { resourceServiceSuite } from "./ResourceServiceSuite.js"
export { logVerifySuite } from "./LogVerifySuite.js"
export { domainReleaseSuite } from "./DomainReleaseSuite.js"
