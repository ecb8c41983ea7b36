/**
 * One outgoing HTTP call to a customer's server (a webhook receiver or a token endpoint).
 *
 * Written on `node:http`/`node:https` rather than `fetch` because a webhook call needs control
 * that `fetch` does not give: redirects must not be followed (a 3xx is a failed delivery, and
 * following one would bypass the address check), the socket must be bound to the configured
 * source address (the spec's fixed source IP), and the connection must go to the address that
 * was checked, not to whatever a second DNS answer says (DNS rebinding).
 *
 * Two shapes share the checks (`Destination.ts`) and the reading of the answer (`Answer.ts`):
 * `send` (`Send.ts`: one body, for webhooks and token requests) and `openStream` (`Stream.ts`: a
 * body written chunk by chunk, for export destinations).
 */

export { DEFAULT_MAX_RESPONSE_BYTES, parseRetryAfter, type SendResult } from "./Answer.js"
export { headerProblem, type SendRequest } from "./Destination.js"
export { send } from "./Send.js"
export { openStream, SendRefused, type StreamingCall, StreamFailed, type StreamRequest } from "./Stream.js"
