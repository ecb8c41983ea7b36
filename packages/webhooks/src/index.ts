export * as Address from "./Address.js"
export { Dispatcher, type DispatcherConfig, type DispatcherService } from "./Dispatcher.js"
export * as OAuth from "./OAuth.js"
export { type ClientCredentials, makeTokenCache, type TokenCache, TokenError } from "./OAuth.js"
export * as RetryPolicy from "./RetryPolicy.js"
export { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule } from "./RetryPolicy.js"
export * as Sender from "./Sender.js"
export {
  openStream,
  send,
  SendRefused,
  type SendRequest,
  type SendResult,
  type StreamingCall,
  StreamFailed,
  type StreamRequest
} from "./Sender.js"
export * as Signer from "./Signer.js"
export {
  makeSubscribers,
  SubscriberAlreadyHandled,
  type SubscriberHandler,
  type SubscriberMessage,
  Subscribers,
  type SubscribersService
} from "./Subscribers.js"
export { sign, SignError } from "./Signer.js"
