/**
 * Test doubles for {@link UrlReader}: a resolver answering from a table, and a connector that
 * opens sockets to loopback only. Asked for any other address it opens nothing, throws, and
 * records the address in `violations`, which a test asserts empty after each case: no test can
 * send a packet beyond 127.0.0.0/8 or ::1, even when the code under test is wrong.
 *
 * @since 0.3.0
 */
import * as net from "node:net"
import type { Address, Connector, Resolver } from "./UrlReader.js"

/**
 * Whether an address is loopback: 127.0.0.0/8 or ::1 (and ::ffff:127.x, the same address).
 *
 * @since 0.3.0
 * @category predicates
 */
export const isLoopback = (address: string): boolean => {
  const v4 = address.startsWith("::ffff:") ? address.slice(7) : address
  if (net.isIPv4(v4)) return v4.split(".")[0] === "127"
  return net.isIPv6(address) && (address === "::1" || address === "0:0:0:0:0:0:0:1")
}

/**
 * A guarded connector and what it was asked for.
 *
 * @since 0.3.0
 * @category models
 */
export interface LoopbackOnly {
  readonly connector: Connector
  /** Every connection asked for, in order. */
  readonly asked: Array<{ readonly address: string; readonly port: number }>
  /** Addresses outside loopback it was asked for: must stay empty. */
  readonly violations: Array<string>
  /** Sends a connection asked for `from` to `to` instead (a resolver or proxy that lands elsewhere), loopback still. */
  readonly redirect: (from: string, to: string) => void
}

/**
 * A connector that opens sockets to loopback addresses only.
 *
 * @since 0.3.0
 * @category constructors
 */
export const loopbackOnly = (): LoopbackOnly => {
  const asked: Array<{ readonly address: string; readonly port: number }> = []
  const violations: Array<string> = []
  const redirects = new Map<string, string>()
  const connector: Connector = (target) => {
    asked.push({ address: target.address, port: target.port })
    if (!isLoopback(target.address)) {
      violations.push(target.address)
      return Promise.reject(new Error(`the test connector refuses ${target.address}: tests connect to loopback only`))
    }
    const to = redirects.get(target.address) ?? target.address
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: to, port: target.port })
      socket.once("connect", () => {
        socket.removeListener("error", reject)
        resolve(socket)
      })
      socket.once("error", reject)
    })
  }
  return { connector, asked, violations, redirect: (from, to) => void redirects.set(from, isLoopback(to) ? to : from) }
}

/**
 * A resolver answering from `table` (host → addresses, or a function of how often the host
 * was asked, for answers that change); unknown hosts fail as DNS would. `lookups` counts the
 * questions per host.
 *
 * @since 0.3.0
 * @category constructors
 */
export const tableResolver = (
  table: Readonly<Record<string, ReadonlyArray<string> | ((asked: number) => ReadonlyArray<string>)>>
): { readonly resolver: Resolver; readonly lookups: Map<string, number> } => {
  const lookups = new Map<string, number>()
  const resolver: Resolver = async (hostname) => {
    const n = (lookups.get(hostname) ?? 0) + 1
    lookups.set(hostname, n)
    const entry = table[hostname]
    if (entry === undefined) throw new Error(`getaddrinfo ENOTFOUND ${hostname}`)
    const addresses = typeof entry === "function" ? entry(n) : entry
    return addresses.map((address): Address => ({ address, family: net.isIPv6(address) ? 6 : 4 }))
  }
  return { resolver, lookups }
}
