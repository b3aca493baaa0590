/**
 * A free loopback port for a bench's server process (the compiled bench cannot import the
 * test support's TypeScript sources).
 */
import { createServer } from "node:net"

export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })
