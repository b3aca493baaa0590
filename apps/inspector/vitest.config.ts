import { defineConfig } from "vitest/config"

// The browser tests drive a real Chromium against the HTTP service started as a process.
export default defineConfig({
  test: { include: ["test/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 120_000, fileParallelism: false }
})
