import { fileURLToPath } from "node:url"
import type { UserConfig } from "vitest/config"

const packages = fileURLToPath(new URL("./packages", import.meta.url))
// One PostgreSQL mechanism for every package: the run's server, or an embedded one (tests/support/src/pg.ts).
const pgGlobalSetup = fileURLToPath(new URL("./tests/support/src/pgGlobalSetup.ts", import.meta.url))

// Inside the workspace, tests run against sibling packages' sources, not their builds.
export const shared: UserConfig = {
  resolve: {
    alias: [
      { find: /^@deixis\/([a-z-]+)$/, replacement: `${packages}/$1/src/index.ts` },
      { find: /^@deixis\/([a-z-]+)\/(.+)$/, replacement: `${packages}/$1/src/$2.ts` }
    ]
  },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: [pgGlobalSetup],
    testTimeout: 30_000
  }
}
