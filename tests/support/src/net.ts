/**
 * Network helpers for tests that start real servers on loopback.
 */
import { createServer } from "node:net"

/** A loopback port nothing listens on (the OS picks it; it is free once this resolves). */
export const freePort = (): Promise<number> =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })
