import { fileURLToPath } from "node:url"
import type { UserConfig } from "vitest/config"

const packages = fileURLToPath(new URL("./packages", import.meta.url))

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
    testTimeout: 30_000
  }
}
