/**
 * The fetch behind `UrlReader`: URL and address checks, one HTTP/1.1 exchange per hop over a
 * socket the injected connector opened to the checked address, bounded reading, charset
 * decoding and text extraction.
 */
import { estimateTokens } from "@deixis/chathistory/PromptAssembler"
import { convert } from "html-to-text"
import { Parser } from "htmlparser2"
import ipaddr from "ipaddr.js"
import * as http from "node:http"
import * as net from "node:net"
import type { Duplex } from "node:stream"
import * as tls from "node:tls"
import * as zlib from "node:zlib"
import type { Address, Connector, FailureReason, Page, Resolver, Settings } from "../UrlReader.js"

/** A refusal or failure, turned into `ReadUrlError` by the reader. */
export class FetchFailure extends Error {
  constructor(
    readonly reason: FailureReason,
    message: string,
    readonly host?: string,
    readonly status?: number
  ) {
    super(message)
  }
}

/** A host as compared: lower case, without IPv6 brackets or a trailing dot. */
export const hostOf = (host: string): string => host.toLowerCase().replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "")

// Cloud metadata services: named, so a refusal says what was asked for.
const metadataAddresses = new Set(["169.254.169.254", "169.254.170.2", "100.100.100.200", "192.0.0.192", "fd00:ec2::254"])
const metadataNames = new Set(["metadata.google.internal", "metadata.goog", "metadata.azure.com", "instance-data", "instance-data.ec2.internal"])

/** Why a host name is refused before it is resolved, or undefined. */
export const forbiddenName = (host: string): string | undefined => {
  if (host === "localhost" || host.endsWith(".localhost")) return "a loopback name"
  if (metadataNames.has(host)) return "a cloud metadata service"
  if (!host.includes(".") && net.isIP(host) === 0) return "a single-label name (resolved by local search domains)"
  return undefined
}

/** Why an address is refused (its class), or undefined for a public unicast address. */
export const forbiddenAddress = (address: string): string | undefined => {
  if (!ipaddr.isValid(address)) return "not an IP address"
  const parsed = ipaddr.parse(address)
  const canonical = parsed.toString()
  if (metadataAddresses.has(canonical)) return "a cloud metadata address"
  if (parsed.kind() === "ipv6") {
    const v6 = parsed as ipaddr.IPv6
    const range = v6.range()
    // IPv4 inside IPv6: judged by the IPv4 address it reaches.
    if (range === "ipv4Mapped") {
      return v6.isIPv4MappedAddress() ? forbiddenAddress(v6.toIPv4Address().toString()) : "an IPv4-compatible IPv6 address"
    }
    if (range === "rfc6052") {
      const bytes = v6.toByteArray().slice(12)
      return forbiddenAddress(bytes.join("."))
    }
    return range === "unicast" ? undefined : describeRange(range)
  }
  const range = parsed.range()
  return range === "unicast" ? undefined : describeRange(range)
}

const describeRange = (range: string): string => {
  switch (range) {
    case "loopback":
      return "a loopback address"
    case "private":
    case "uniqueLocal":
      return "a private address"
    case "linkLocal":
      return "a link-local address"
    case "carrierGradeNat":
      return "a carrier-grade NAT address"
    case "multicast":
      return "a multicast address"
    case "unspecified":
      return "the unspecified address"
    case "broadcast":
      return "the broadcast address"
    default:
      return `a ${range} address`
  }
}

const sameAddress = (a: string, b: string): boolean =>
  ipaddr.isValid(a) && ipaddr.isValid(b) && ipaddr.process(a).toString() === ipaddr.process(b).toString()

interface Deps {
  readonly resolver: Resolver
  readonly connector: Connector
  readonly settings: Settings
  readonly signal: AbortSignal
}

interface Response {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: Buffer
  readonly truncated: boolean
}

/** The URL of one hop, checked: scheme, credentials, host name. */
const checkedUrl = (raw: string, settings: Settings): { readonly url: URL; readonly host: string; readonly allowed: boolean } => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new FetchFailure("invalid_url", "not a valid absolute URL")
  }
  const host = hostOf(url.hostname)
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new FetchFailure("unsupported_scheme", `only http and https URLs are read, not ${url.protocol.replace(/:$/, "")}`, host)
  }
  if (url.username !== "" || url.password !== "") throw new FetchFailure("credentials_in_url", "URLs with credentials are not read", host)
  if (host === "") throw new FetchFailure("invalid_url", "the URL names no host")
  const allowed = settings.allow_hosts.includes(host)
  const why = allowed ? undefined : forbiddenName(host)
  if (why !== undefined) throw new FetchFailure("forbidden_host", `${host} is ${why}: not read`, host)
  return { url, host, allowed }
}

/** The host's addresses, each checked (unless the host is allowed). */
const addressesOf = async (host: string, allowed: boolean, resolver: Resolver): Promise<ReadonlyArray<Address>> => {
  const family = net.isIP(host)
  let addresses: ReadonlyArray<Address>
  if (family !== 0) {
    addresses = [{ address: host, family: family === 6 ? 6 : 4 }]
  } else {
    try {
      addresses = await resolver(host)
    } catch (error) {
      throw new FetchFailure("dns_failed", `${host} did not resolve: ${error instanceof Error ? error.message : String(error)}`, host)
    }
    if (addresses.length === 0) throw new FetchFailure("dns_failed", `${host} has no address`, host)
  }
  if (!allowed) {
    // Every address, not just the first: a host answering a public and a private address is not read.
    for (const a of addresses) {
      const why = forbiddenAddress(a.address)
      if (why !== undefined) throw new FetchFailure("forbidden_address", `${host} resolves to ${why}: not read`, host)
    }
  }
  return addresses
}

const once = <A>(emitter: NodeJS.EventEmitter, ok: string, signal: AbortSignal, value: () => A): Promise<A> =>
  new Promise((resolve, reject) => {
    const onError = (error: Error) => {
      cleanup()
      reject(error)
    }
    const onOk = () => {
      cleanup()
      resolve(value())
    }
    const onAbort = () => {
      cleanup()
      reject(new FetchFailure("timeout", "the read was cancelled"))
    }
    const cleanup = () => {
      emitter.removeListener(ok, onOk)
      emitter.removeListener("error", onError)
      signal.removeEventListener("abort", onAbort)
    }
    emitter.once(ok, onOk)
    emitter.once("error", onError)
    signal.addEventListener("abort", onAbort, { once: true })
  })

/** A connection to the first address that answers: checked again on the connected socket. */
const connect = async (
  url: URL,
  host: string,
  allowed: boolean,
  addresses: ReadonlyArray<Address>,
  deps: Deps,
  sockets: Set<Duplex>
): Promise<Duplex> => {
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port)
  let last: unknown
  for (const target of addresses) {
    if (deps.signal.aborted) throw new FetchFailure("timeout", "the read was cancelled", host)
    let socket: net.Socket
    try {
      socket = await deps.connector({ address: target.address, family: target.family, port })
    } catch (error) {
      last = error
      continue
    }
    sockets.add(socket)
    const remote = socket.remoteAddress ?? ""
    // The socket is where the bytes go: it must be the address checked, and itself allowed.
    if (!sameAddress(remote, target.address) || (!allowed && forbiddenAddress(remote) !== undefined)) {
      socket.destroy()
      throw new FetchFailure("address_changed", `the connection to ${host} reached ${remote || "an unknown address"}, not the address checked`, host)
    }
    if (url.protocol === "http:") return socket
    const secure = tls.connect({ socket, servername: net.isIP(host) === 0 ? host : undefined, ALPNProtocols: ["http/1.1"] })
    sockets.add(secure)
    try {
      return await once(secure, "secureConnect", deps.signal, () => secure)
    } catch (error) {
      throw error instanceof FetchFailure ? error : new FetchFailure("tls_failed", `TLS with ${host} failed: ${(error as Error).message}`, host)
    }
  }
  throw new FetchFailure("connect_failed", `could not connect to ${host}: ${last instanceof Error ? last.message : "no address answered"}`, host)
}

const decompressor = (encoding: string | undefined): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | null | "unsupported" => {
  switch ((encoding ?? "identity").trim().toLowerCase()) {
    case "identity":
    case "":
      return null
    case "gzip":
    case "x-gzip":
      return zlib.createGunzip()
    case "deflate":
      return zlib.createInflate()
    case "br":
      return zlib.createBrotliDecompress()
    default:
      return "unsupported"
  }
}

/** One request and its response, the body read to `max_bytes` (decoded bytes when compressed). */
const exchange = (url: URL, host: string, socket: Duplex, deps: Deps): Promise<Response> =>
  new Promise((resolve, reject) => {
    const max = deps.settings.max_bytes
    const request = http.request({
      method: "GET",
      host: url.hostname,
      port: url.port,
      path: `${url.pathname}${url.search}`,
      headers: {
        host: url.host,
        "user-agent": "deixis-read-url/0.3 (+https://github.com/deixis/deixis)",
        accept: "text/html, text/plain;q=0.9",
        "accept-encoding": "gzip, deflate, br",
        connection: "close"
      },
      // The socket opened to the checked address: Node opens none of its own.
      createConnection: () => socket as net.Socket
    })
    const fail = (error: unknown) => {
      request.destroy()
      reject(error)
    }
    deps.signal.addEventListener("abort", () => fail(new FetchFailure("timeout", "the read was cancelled", host)), { once: true })
    request.once("error", (error) =>
      reject(error instanceof FetchFailure ? error : new FetchFailure("protocol_error", `${host} did not answer HTTP: ${error.message}`, host)))
    request.once("response", (response) => {
      const status = response.statusCode ?? 0
      if (status < 200 || status >= 300) {
        // No body is read for a redirect or an error: only the status and headers matter.
        response.destroy()
        resolve({ status, headers: response.headers, body: Buffer.alloc(0), truncated: false })
        return
      }
      const inflate = decompressor(response.headers["content-encoding"])
      if (inflate === "unsupported") {
        response.destroy()
        reject(new FetchFailure("protocol_error", `${host} sent an unsupported content encoding`, host))
        return
      }
      const chunks: Array<Buffer> = []
      let raw = 0
      let decoded = 0
      let truncated = false
      let finished = false
      const finish = () => {
        if (finished) return
        finished = true
        response.destroy()
        inflate?.destroy()
        resolve({ status, headers: response.headers, body: Buffer.concat(chunks), truncated })
      }
      const take = (chunk: Buffer) => {
        if (finished) return
        const room = max - decoded
        if (chunk.length >= room) {
          // At the bound: whatever follows is not read (a body of exactly the bound is said cut too).
          chunks.push(chunk.subarray(0, room))
          decoded = max
          truncated = true
          finish()
          return
        }
        chunks.push(chunk)
        decoded += chunk.length
      }
      response.on("data", (chunk: Buffer) => {
        raw += chunk.length
        if (inflate === null) take(chunk)
        else inflate.write(chunk)
        // Compressed or not, no more than `max_bytes` come off the wire.
        if (raw >= max && !finished) {
          truncated = true
          if (inflate === null) finish()
          else inflate.end()
        }
      })
      response.once("end", () => (inflate === null ? finish() : inflate.end()))
      response.once("error", (error) => (finished ? undefined : fail(new FetchFailure("protocol_error", `${host} broke off: ${error.message}`, host))))
      if (inflate !== null) {
        inflate.on("data", take)
        inflate.once("end", finish)
        inflate.once("error", (error) =>
          finished ? undefined : fail(new FetchFailure("protocol_error", `${host} sent a body that does not decompress: ${error.message}`, host)))
      }
    })
    request.end()
  })

/** The charset a page declares: its header's, else (HTML) its `<meta>`'s, else UTF-8 (with a BOM, the BOM's). */
const charsetOf = (contentType: { readonly params: ReadonlyMap<string, string> }, html: boolean, body: Buffer): string => {
  const declared = contentType.params.get("charset")
  if (declared !== undefined && declared !== "") return declared
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return "utf-8"
  if (body[0] === 0xfe && body[1] === 0xff) return "utf-16be"
  if (body[0] === 0xff && body[1] === 0xfe) return "utf-16le"
  return html ? metaCharset(body.subarray(0, 1024).toString("latin1")) ?? "utf-8" : "utf-8"
}

/** The charset of `<meta charset>` or `<meta http-equiv="content-type" content="…; charset=…">`, parsed by htmlparser2. */
const metaCharset = (head: string): string | undefined => {
  let found: string | undefined
  const parser = new Parser({
    onopentag: (name, attributes) => {
      if (found !== undefined || name !== "meta") return
      if (attributes["charset"] !== undefined) found = attributes["charset"].trim()
      else if (attributes["http-equiv"]?.toLowerCase() === "content-type" && attributes["content"] !== undefined) {
        found = parseContentType(attributes["content"]).params.get("charset")
      }
    }
  }, { decodeEntities: true })
  parser.write(head)
  parser.end()
  return found
}

/** A `Content-Type` value: its media type and parameters (RFC 9110 syntax, values unquoted). */
const parseContentType = (value: string): { readonly type: string; readonly params: ReadonlyMap<string, string> } => {
  const [type = "", ...rest] = value.split(";")
  const params = new Map<string, string>()
  for (const part of rest) {
    const at = part.indexOf("=")
    if (at < 0) continue
    params.set(part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).trim().replace(/^"(.*)"$/, "$1").toLowerCase())
  }
  return { type: type.trim().toLowerCase(), params }
}

/** The `<title>` of a page, parsed by htmlparser2 from its start. */
const titleOf = (html: string): string | null => {
  let inTitle = false
  let done = false
  let title = ""
  const parser = new Parser({
    onopentag: (name) => {
      if (name === "title" && !done) inTitle = true
    },
    ontext: (text) => {
      if (inTitle) title += text
    },
    onclosetag: (name) => {
      if (name === "title" && inTitle) {
        inTitle = false
        done = true
      }
    }
  }, { decodeEntities: true })
  parser.write(html.slice(0, 64 * 1024))
  parser.end()
  const flat = title.replace(/\s+/g, " ").trim()
  return flat === "" ? null : flat
}

/** The readable text of an HTML page: its main content, without scripts, styles, navigation or images. */
const readableText = (html: string): string =>
  convert(html, {
    wordwrap: false,
    baseElements: { selectors: ["main", "article", "body"], returnDomByDefault: true },
    selectors: [
      { selector: "a", options: { ignoreHref: true } },
      { selector: "img", format: "skip" },
      { selector: "nav", format: "skip" },
      { selector: "footer", format: "skip" },
      { selector: "form", format: "skip" },
      { selector: "svg", format: "skip" },
      { selector: "h1", options: { uppercase: false } },
      { selector: "h2", options: { uppercase: false } },
      { selector: "h3", options: { uppercase: false } },
      { selector: "table", format: "dataTable", options: { uppercaseHeaderCells: false } }
    ]
  }).replace(/\n{3,}/g, "\n\n").trim()

/** `text` cut to `max` estimated tokens at a word boundary, and what was cut, said plainly. */
export const cutToTokens = (text: string, max: number): { readonly text: string; readonly tokens: number; readonly cut: string | null } => {
  const total = estimateTokens(text)
  if (total <= max) return { text, tokens: total, cut: null }
  // The estimate grows with the length: the longest prefix within the budget, by bisection.
  let lo = 0
  let hi = text.length
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (estimateTokens(text.slice(0, mid)) <= max) lo = mid
    else hi = mid - 1
  }
  let end = lo
  const space = text.lastIndexOf(" ", end)
  if (space > end * 0.8) end = space
  // Never half a surrogate pair.
  const code = text.charCodeAt(end - 1)
  if (code >= 0xd800 && code <= 0xdbff) end--
  const kept = text.slice(0, end).trimEnd()
  const tokens = estimateTokens(kept)
  return { text: kept, tokens, cut: `the text was cut to about ${tokens} of about ${total} tokens (the page's beginning is kept)` }
}

/** Reads `raw`: every hop checked, at most `max_redirects` redirects. Sockets are closed whatever happens. */
export const fetchPage = async (raw: string, deps: Deps): Promise<Page> => {
  const sockets = new Set<Duplex>()
  try {
    let current = raw
    for (let redirects = 0;; redirects++) {
      const { url, host, allowed } = checkedUrl(current, deps.settings)
      const addresses = await addressesOf(host, allowed, deps.resolver)
      const socket = await connect(url, host, allowed, addresses, deps, sockets)
      const response = await exchange(url, host, socket, deps)
      socket.destroy()
      const status = response.status
      if (status >= 300 && status < 400 && response.headers.location !== undefined) {
        if (redirects >= deps.settings.max_redirects) {
          throw new FetchFailure("too_many_redirects", `more than ${deps.settings.max_redirects} redirects`, host, status)
        }
        try {
          current = new URL(response.headers.location, url).toString()
        } catch {
          throw new FetchFailure("protocol_error", `${host} redirected to an invalid URL`, host, status)
        }
        continue
      }
      if (status < 200 || status >= 300) throw new FetchFailure("http_status", `${host} answered HTTP ${status}`, host, status)
      const contentType = parseContentType(response.headers["content-type"] ?? "")
      const html = contentType.type === "text/html"
      if (!html && contentType.type !== "text/plain") {
        throw new FetchFailure(
          "unsupported_content_type",
          `${host} sent ${contentType.type === "" ? "no content type" : contentType.type}; only text/html and text/plain are read`,
          host,
          status
        )
      }
      const charset = charsetOf(contentType, html, response.body)
      let decoded: string
      try {
        decoded = new TextDecoder(charset).decode(response.body)
      } catch {
        throw new FetchFailure("unsupported_charset", `${host} declared the charset ${charset}, which is not known`, host, status)
      }
      const title = html ? titleOf(decoded) : null
      const text = cutToTokens(html ? readableText(decoded) : decoded.replace(/\r\n?/g, "\n").trim(), deps.settings.max_tokens)
      return {
        url: raw,
        final_url: url.toString(),
        status,
        content_type: contentType.type,
        charset: new TextDecoder(charset).encoding,
        title,
        text: text.text,
        bytes: response.body.length,
        truncated_bytes: response.truncated,
        tokens: text.tokens,
        cut: text.cut,
        redirects
      }
    }
  } finally {
    for (const s of sockets) s.destroy()
  }
}
