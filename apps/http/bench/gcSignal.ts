/**
 * Preloaded into the benchmark's server by `bench/rss.ts` (`node --expose-gc --import`): on
 * SIGUSR2 the process runs a full garbage collection and prints its `process.memoryUsage()`
 * as one line, `deixis-memory {json}`, on stdout. Never part of the service.
 */
process.on("SIGUSR2", () => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc !== undefined) {
    gc()
    gc()
  }
  process.stdout.write(`deixis-memory ${JSON.stringify({ gc: gc !== undefined, ...process.memoryUsage() })}\n`)
})
