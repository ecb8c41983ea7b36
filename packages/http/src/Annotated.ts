import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import * as Runtime from "effect/Runtime"

/**
 * A runtime whose fibers start with these log annotations (beside the runtime's own), and with
 * the fiber refs `refs` set. `Effect.annotateLogs` sets them from inside the fiber: it copies the
 * fiber's references on the way in and again on the way out, and compares the old and the new
 * annotations structurally, hashing every key and value. For the seven annotations of a
 * request's log line that was half of the line's cost; a runtime holding them costs one copy of
 * the references, whatever else it sets (`Effect.locally` would copy them twice more, and add a
 * finalizer, on every request).
 */
export const annotated = <R>(
  base: Runtime.Runtime<R>,
  annotations: Readonly<Record<string, unknown>>,
  refs: ReadonlyArray<readonly [FiberRef.FiberRef<any>, unknown]> = []
): Runtime.Runtime<R> =>
  Runtime.make({
    context: base.context,
    runtimeFlags: base.runtimeFlags,
    fiberRefs: FiberRefs.updateManyAs(base.fiberRefs, {
      entries: [
        [FiberRef.currentLogAnnotations, [[
          FiberId.none,
          HashMap.mutate(FiberRefs.getOrDefault(base.fiberRefs, FiberRef.currentLogAnnotations), (map) => {
            for (const key in annotations) HashMap.set(map, key, annotations[key])
          })
        ]]],
        ...refs.map(([ref, value]) => [ref, [[FiberId.none, value]]] as const)
      ]
    })
  })
