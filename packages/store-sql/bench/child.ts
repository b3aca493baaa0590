/**
 * What the bench's suites share: each measurement in a fresh Node process (so no store pays
 * for another's heap), its result one JSON line on stdout; and the PostgreSQL schema dropped
 * after.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { fork } from "node:child_process"
import * as SqlStore from "../src/SqlStore.js"

/** Runs `script` in a child process with `env` added, and decodes its last stdout line as `result`. */
export const inChild = <A, I>(script: string, env: Record<string, string>, result: Schema.Schema<A, I>, label: string) =>
  Effect.async<A, Error>((resume) => {
    const child = fork(script, [], {
      env: { ...process.env, ...env },
      execArgv: process.execArgv,
      stdio: ["ignore", "pipe", "inherit", "ipc"]
    })
    let out = ""
    child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()))
    child.on("exit", (code) => {
      const line = out.trim().split("\n").pop() ?? ""
      const parsed = Schema.decodeUnknownEither(Schema.parseJson(result))(line)
      if (code === 0 && parsed._tag === "Right") resume(Effect.succeed(parsed.right))
      else resume(Effect.fail(new Error(`${label} bench failed (exit ${code})`)))
    })
  })

/** Drops a bench's PostgreSQL schema. */
export const dropSchema = (url: string, schema: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).pipe(
    Effect.provide(SqlStore.layerPgClient({ url }))
  )
