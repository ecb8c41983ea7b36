#!/usr/bin/env node
import { describeFailure } from "./Failure.js"
import { tuneHeap } from "./Heap.js"

/**
 * `serve` (the default), `worker`, `bootstrap`, `verify-log`, `rotate-receipt-key`, `rotate-token-key`, `reseal-secrets`, `verify-receipt` or `backup`. Each command is loaded only when asked for, so
 * a worker or a bootstrap never loads the HTTP layer or Express.
 */
const commands: Record<string, () => Promise<void>> = {
  serve: () => import("./Serve.js").then((m) => m.serve()),
  worker: () => import("./Worker.js").then((m) => m.work()),
  bootstrap: () => import("./Bootstrap.js").then((m) => m.bootstrapKey()),
  "verify-log": () => import("./VerifyLog.js").then((m) => m.verifyLogCommand(process.argv.slice(3))),
  "rotate-receipt-key": () => import("./RotateReceiptKey.js").then((m) => m.rotateReceiptKeyCommand(process.argv.slice(3))),
  "rotate-token-key": () => import("./RotateTokenKey.js").then((m) => m.rotateTokenKeyCommand(process.argv.slice(3))),
  "reseal-secrets": () => import("./ResealSecrets.js").then((m) => m.resealSecretsCommand(process.argv.slice(3))),
  "verify-receipt": () => import("./VerifyReceipt.js").then((m) => m.verifyReceiptCommand(process.argv.slice(3))),
  backup: () => import("./Backup.js").then((m) => m.backupCommand(process.argv.slice(3)))
}

tuneHeap()

const command = process.argv[2] ?? "serve"
const run = commands[command]
if (run === undefined) {
  console.error(`Unknown command '${command}'; use 'serve', 'worker', 'bootstrap', 'verify-log', 'rotate-receipt-key', 'rotate-token-key', 'reseal-secrets', 'verify-receipt' or 'backup'`)
  process.exit(1)
}
run().catch((error) => {
  console.error(describeFailure(error))
  process.exit(1)
})
