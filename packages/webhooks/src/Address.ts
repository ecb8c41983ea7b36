/**
 * The address policy of outbound calls to customer-chosen URLs. It lives in `@cmp/core`
 * (`AddressPolicy`) so that the config-time check (`checkReceiverUrl`) and the send-time check
 * here apply one rule; this module keeps the names the webhooks package has always exported.
 */
export {
  ipFamily,
  isAllowedHost,
  isIpLiteral,
  isNonPublicAddress,
  isNonPublicHostName,
  normalizeHost,
  parseIPv4,
  parseIPv6
} from "@cmp/core"
