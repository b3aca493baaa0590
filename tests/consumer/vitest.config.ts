import { defineConfig } from "vitest/config"

// No @deixis aliases here: this suite only looks at packed tarballs, never at sources.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Build, pack and a cold `npm install` from the registry.
    testTimeout: 600_000,
    hookTimeout: 600_000
  }
})
