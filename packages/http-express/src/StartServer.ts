import type { HttpApiOptions } from "./HttpApi.js"
import { createApi } from "./Router.js"
import { listen, type ListenOptions, type RunningServer } from "./Server.js"

export interface ServerOptions extends HttpApiOptions, ListenOptions {}

/** The platform, its API and a listening Express server, from one set of options. */
export const startServer = async (options: ServerOptions): Promise<RunningServer> => listen(await createApi(options), options)
