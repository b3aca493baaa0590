import { defineConfig } from "vite"

// Served by apps/http under /inspect/; one script and one stylesheet, no source maps shipped.
export default defineConfig({
  base: "/inspect/",
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, target: "es2022", modulePreload: { polyfill: false } }
})
