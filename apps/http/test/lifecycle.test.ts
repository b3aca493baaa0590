/**
 * The process's stop, as an operator sees it: SIGTERM with connections a client left open.
 * The shutdown timeout is set far above what these tests wait, so a stop that waited on an
 * idle or half-sent connection would time the test out rather than pass slowly.
 */
import { assert, describe, it } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { ContextStore } from "@deixis/core"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { mkdtempSync, rmSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Server from "../src/Server.js"
import * as Store from "../src/Store.js"
import { exited, freePort, launch as start, ready } from "./process.js"

const launch = (port: number, dir: string) =>
  start(port, join(dir, "deixis.db"), { DEIXIS_SHUTDOWN_TIMEOUT: "10 minutes", DEIXIS_LOG_FORMAT: "json" })

const open = (port: number) =>
  new Promise<Socket>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket))
    socket.once("error", reject)
  })

/** A socket's whole input until the server closes it. */
const drained = (socket: Socket) =>
  new Promise<string>((resolve) => {
    let data = ""
    socket.on("data", (chunk: Buffer) => (data += chunk.toString("latin1")))
    socket.on("error", () => {})
    socket.once("close", () => resolve(data))
  })

/** One request on a fresh keep-alive connection, answered; the connection stays open. */
const idleKeepAlive = async (port: number) => {
  const socket = await open(port)
  const answered = new Promise<string>((resolve) => socket.once("data", (chunk: Buffer) => resolve(chunk.toString("latin1"))))
  socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
  const first = await answered
  return { socket, first }
}

const withService = (body: (port: number, service: ReturnType<typeof launch>, restart: () => ReturnType<typeof launch>) => Promise<void>) =>
  Effect.promise(async () => {
    const dir = mkdtempSync(join(tmpdir(), "deixis-http-lifecycle-"))
    const port = await freePort()
    const services = [launch(port, dir)]
    try {
      await ready(port)
      await body(port, services[0]!, () => {
        const next = launch(port, dir)
        services.push(next)
        return next
      })
    } finally {
      for (const service of services) service.child.kill("SIGKILL")
      rmSync(dir, { recursive: true, force: true })
    }
  })

describe("stopping", () => {
  it.live("SIGTERM with an idle keep-alive connection open: the connection is closed and the process exits 0", () =>
    withService(async (port, { child }) => {
      const { first, socket } = await idleKeepAlive(port)
      assert.match(first, /^HTTP\/1\.1 200/)
      const closed = drained(socket)
      child.kill("SIGTERM")
      assert.strictEqual(await exited(child), 0)
      assert.strictEqual(await closed, "", "the idle connection is closed without another response")
    }), 120_000)

  it.live("SIGTERM with half-sent requests (headers, and a body) open: they are dropped, nothing of them is stored, exit 0", () =>
    withService(async (port, { child }, restart) => {
      const headers = await open(port)
      headers.write(`POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: app`)
      const body = await open(port)
      const event = JSON.stringify([{ type: "message_observed", chat_id: 5, message_id: 1 }])
      body.write(`POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${event.length}\r\n\r\n${event.slice(0, 10)}`)
      const [headersClosed, bodyClosed] = [drained(headers), drained(body)]
      await new Promise((r) => setTimeout(r, 200))
      child.kill("SIGTERM")
      assert.strictEqual(await exited(child), 0)
      assert.deepStrictEqual(await Promise.all([headersClosed, bodyClosed]), ["", ""])
      const again = restart()
      await ready(port)
      const context = await fetch(`http://127.0.0.1:${port}/v1/chats/5/context`).then((r) => r.json() as Promise<{ messages: ReadonlyArray<unknown> }>)
      assert.deepStrictEqual(context.messages, [])
      again.child.kill("SIGTERM")
      assert.strictEqual(await exited(again.child), 0)
    }), 120_000)

  it.live("a request being handled when the stop begins is answered, with connection: close, and the stop waits for it", () =>
    Effect.gen(function*() {
      // The memory store, its apply held until the test lets it go.
      const entered = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const held = Layer.effect(
        ContextStore.ContextStore,
        Effect.map(ContextStore.ContextStore, (store) => ({
          ...store,
          apply: (events, options) =>
            Deferred.succeed(entered, undefined).pipe(Effect.zipRight(Deferred.await(release)), Effect.zipRight(store.apply(events, options)))
        }) satisfies ContextStore.ContextStoreShape)
      ).pipe(Layer.provide(ContextStore.layerMemoryConfig()))
      // The memory stores, with the held ContextStore in place of theirs (the right side wins).
      const stores = Layer.merge(Store.layerMemory, held)
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        Server.layer({ ...Server.defaults, port: 0, host: "127.0.0.1" }, stores).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))),
        scope
      )
      const address = (yield* Effect.provide(HttpServer.HttpServer, context)).address
      const port = address._tag === "TcpAddress" ? address.port : 0

      const socket = yield* Effect.promise(() => open(port))
      const response = drained(socket)
      const event = JSON.stringify([{ type: "message_observed", chat_id: 6, message_id: 1 }])
      socket.write(`POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${event.length}\r\n\r\n${event}`)
      yield* Deferred.await(entered)

      const stopping = yield* Effect.fork(Scope.close(scope, Exit.void))
      // The stop has begun: the listening socket is closed, so a new connection is refused.
      const refused = yield* Effect.promise(async () => {
        for (let attempt = 0; attempt < 200; attempt++) {
          const ok = await open(port).then((s) => (s.destroy(), true), () => false)
          if (!ok) return true
          await new Promise((r) => setTimeout(r, 25))
        }
        return false
      })
      assert.isTrue(refused, "new connections are refused once the stop has begun")
      assert.isTrue(Option.isNone(yield* Fiber.poll(stopping)), "the stop waits for the request being handled")

      yield* Deferred.succeed(release, undefined)
      const answer = yield* Effect.promise(() => response)
      yield* Fiber.join(stopping)
      assert.match(answer, /^HTTP\/1\.1 200/)
      assert.match(answer.toLowerCase(), /\r\nconnection: close\r\n/)
      assert.include(answer, "\"applied\":1")
    }), 60_000)

  it.live("it says at start where it listens and that it is unauthenticated, as one JSON line per entry", () =>
    withService(async (_port, { child, output }) => {
      child.kill("SIGTERM")
      await exited(child)
      const lines = output().split("\n").filter((l) => l.trim() !== "")
      for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), line)
      const start = lines.map((l) => JSON.parse(l) as { message: unknown; annotations: Record<string, unknown> }).find((l) => String(l.message).includes("listening on"))
      assert.isDefined(start)
      assert.include(String(start!.message), "http://127.0.0.1:")
      assert.include(String(start!.annotations["auth"]), "no authentication")
    }), 120_000)
})
