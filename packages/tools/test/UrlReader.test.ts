/**
 * read_url's reader, against real HTTP servers on loopback. Every case injects the resolver and
 * a connector that opens sockets to loopback only and records any other address it is asked for:
 * after each case that list must be empty, so no test sends a packet beyond 127.0.0.0/8 or ::1.
 * A page served on loopback is read only through `allow_hosts` (DEIXIS_FETCH_ALLOW_HOSTS).
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import * as os from "node:os"
import * as path from "node:path"
import type * as net from "node:net"
import * as zlib from "node:zlib"
import * as UrlReader from "../src/UrlReader.js"
import * as UrlReaderTesting from "../src/UrlReaderTesting.js"

type Handler = (request: http.IncomingMessage, response: http.ServerResponse) => void

/** A server on `host` (loopback) answering `routes` by path; `sockets` counts what closed. */
const serve = (routes: Record<string, Handler>, host = "127.0.0.1", port = 0) =>
  Effect.acquireRelease(
    Effect.async<{ readonly server: http.Server; readonly port: number; readonly closed: () => number }>((resume) => {
      let closed = 0
      const server = http.createServer((request, response) => {
        const route = routes[new URL(request.url ?? "/", "http://x").pathname]
        if (route === undefined) {
          response.writeHead(404, { "content-type": "text/plain" }).end("no such page")
          return
        }
        route(request, response)
      })
      server.on("connection", (socket: net.Socket) => socket.once("close", () => void closed++))
      server.listen(port, host, () => resume(Effect.succeed({ server, port: (server.address() as net.AddressInfo).port, closed: () => closed })))
    }),
    ({ server }) => Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
  )

const html = (body: string, type = "text/html; charset=utf-8"): Handler => (_, response) =>
  void response.writeHead(200, { "content-type": type }).end(body)

const redirect = (to: string): Handler => (_, response) => void response.writeHead(302, { location: to }).end()

const article = `<!doctype html><html><head><meta charset="utf-8"><title>Town fair &amp; more</title>
<style>body { color: red }</style><script>track()</script></head>
<body><nav><a href="/">Home</a> | <a href="/news">News</a></nav>
<main><h1>The town fair</h1><p>Three things happened at the <a href="/fair">fair</a>.</p><img src="x.png" alt="photo"><ul><li>Rides</li><li>Cakes</li></ul></main>
<footer>© Town</footer></body></html>`

let guard = UrlReaderTesting.loopbackOnly()
afterEach(() => {
  // The whole point: whatever a case did, nothing was asked of any address but loopback.
  assert.deepStrictEqual(guard.violations, [])
  guard = UrlReaderTesting.loopbackOnly()
})

const reader = (
  table: Parameters<typeof UrlReaderTesting.tableResolver>[0] = {},
  settings: Partial<UrlReader.Settings> = {},
  onRead?: (record: UrlReader.FetchRecord) => void
) => {
  const dns = UrlReaderTesting.tableResolver(table)
  const built = UrlReader.make(
    { allow_hosts: ["news.example"], ...settings },
    { resolver: dns.resolver, connector: guard.connector, ...(onRead === undefined ? {} : { onRead }) }
  )
  return { read: built.read, lookups: dns.lookups }
}

const failure = (effect: Effect.Effect<UrlReader.Page, UrlReader.ReadUrlError>) =>
  Effect.map(Effect.either(effect), (result) => {
    assert.isTrue(Either.isLeft(result), "the read must fail")
    return (result as Either.Left<UrlReader.ReadUrlError, UrlReader.Page>).left
  })

describe("read_url refuses what it must not read", () => {
  const refusals: ReadonlyArray<readonly [string, string, UrlReader.FailureReason, Parameters<typeof UrlReaderTesting.tableResolver>[0]?]> = [
    ["http://127.0.0.1/ (loopback)", "http://127.0.0.1/", "forbidden_address"],
    ["http://[::1]/ (IPv6 loopback)", "http://[::1]/", "forbidden_address"],
    ["http://169.254.169.254/ (cloud metadata)", "http://169.254.169.254/latest/meta-data/", "forbidden_address"],
    ["http://10.0.0.1/ (private)", "http://10.0.0.1/", "forbidden_address"],
    ["a hostname that resolves to a private address", "http://intranet.example/wiki", "forbidden_address", { "intranet.example": ["192.168.1.20"] }],
    ["a hostname with a public and a private address", "https://mixed.example/", "forbidden_address", { "mixed.example": ["93.184.215.14", "10.1.2.3"] }],
    ["a hostname that resolves to AWS's IPv6 metadata address", "http://meta.example/", "forbidden_address", { "meta.example": ["fd00:ec2::254"] }],
    ["an IPv4-mapped IPv6 loopback", "http://[::ffff:127.0.0.1]/", "forbidden_address"],
    ["the metadata address, IPv4-mapped", "http://[::ffff:a9fe:a9fe]/", "forbidden_address"],
    ["a NAT64 address of a private one", "http://[64:ff9b::a00:1]/", "forbidden_address"],
    ["a link-local IPv6 address", "http://[fe80::1]/", "forbidden_address"],
    ["a unique-local IPv6 address", "http://[fd12:3456::1]/", "forbidden_address"],
    ["a carrier-grade NAT address", "http://100.64.0.1/", "forbidden_address"],
    ["Alibaba's metadata address (CGNAT)", "http://100.100.100.200/", "forbidden_address"],
    ["a multicast address", "http://224.0.0.1/", "forbidden_address"],
    ["the unspecified address", "http://0.0.0.0/", "forbidden_address"],
    ["loopback written as a decimal number", "http://2130706433/", "forbidden_address"],
    ["172.16/12 (private)", "http://172.31.255.1/", "forbidden_address"],
    ["localhost, by name", "http://localhost:8080/", "forbidden_host"],
    ["a .localhost name", "http://api.localhost/", "forbidden_host"],
    ["Google's metadata name", "http://metadata.google.internal/computeMetadata/v1/", "forbidden_host"],
    ["a single-label name", "http://intranet/", "forbidden_host"],
    ["a file URL", "file:///etc/passwd", "unsupported_scheme"],
    ["an ftp URL", "ftp://example.com/file", "unsupported_scheme"],
    ["a URL with credentials", "http://user:secret@example.com/", "credentials_in_url"],
    ["something that is no URL", "not a url", "invalid_url"],
    ["a host that does not resolve", "http://nowhere.example/", "dns_failed"]
  ]
  for (const [name, url, reason, table] of refusals) {
    it.live(`refuses ${name}, and opens no socket`, () =>
      Effect.gen(function*() {
        const error = yield* failure(reader(table).read(url))
        assert.strictEqual(error._tag, "ReadUrlError")
        assert.strictEqual(error.reason, reason, error.message)
        assert.deepStrictEqual(guard.asked, [])
      }))
  }

  it.scoped("refuses a public-looking URL that redirects to a private address; only the first hop is connected", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ "/story": redirect("http://10.0.0.1/admin") })
      const error = yield* failure(reader({ "news.example": ["127.0.0.1"] }).read(`http://news.example:${port}/story`))
      assert.strictEqual(error.reason, "forbidden_address")
      assert.deepStrictEqual(guard.asked.map((a) => a.address), ["127.0.0.1"])
    }))

  it.scoped("refuses a redirect to a name that resolves to a private address, and to loopback itself", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({
        "/a": redirect("http://internal.example/secrets"),
        "/b": redirect("http://127.0.0.1/")
      })
      const read = reader({ "news.example": ["127.0.0.1"], "internal.example": ["10.20.30.40"] }).read
      assert.strictEqual((yield* failure(read(`http://news.example:${port}/a`))).reason, "forbidden_address")
      assert.strictEqual((yield* failure(read(`http://news.example:${port}/b`))).reason, "forbidden_address")
    }))

  it.scoped("DNS rebinding: the host is resolved once per hop and the socket goes to the very address checked", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ "/": html("<title>ok</title><p>fine</p>") })
      // An answer that changes after the first question: a second lookup would connect to 10.0.0.1.
      const { read, lookups } = reader({ "news.example": (n) => (n === 1 ? ["127.0.0.1"] : ["10.0.0.1"]) })
      const page = yield* read(`http://news.example:${port}/`)
      assert.strictEqual(page.title, "ok")
      assert.strictEqual(lookups.get("news.example"), 1)
      assert.deepStrictEqual(guard.asked.map((a) => a.address), ["127.0.0.1"])
    }))

  it.scoped("a connection that lands on another address than the one checked is refused", () =>
    Effect.gen(function*() {
      const first = yield* serve({ "/": html("<p>v4</p>") })
      yield* serve({ "/": html("<p>v6</p>") }, "::1", first.port)
      guard.redirect("127.0.0.1", "::1")
      const error = yield* failure(reader({ "news.example": ["127.0.0.1"] }).read(`http://news.example:${first.port}/`))
      assert.strictEqual(error.reason, "address_changed")
    }))

  it.scoped("at most 3 redirects, each checked; a fourth is refused", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({
        "/1": redirect("/2"),
        "/2": redirect("/3"),
        "/3": redirect("/4"),
        "/4": redirect("/5"),
        "/5": html("<title>end</title>")
      })
      const read = reader({ "news.example": ["127.0.0.1"] }).read
      const page = yield* read(`http://news.example:${port}/2`)
      assert.deepStrictEqual([page.title, page.redirects, page.final_url], ["end", 3, `http://news.example:${port}/5`])
      assert.strictEqual((yield* failure(read(`http://news.example:${port}/1`))).reason, "too_many_redirects")
    }))
})

describe("read_url reads within its bounds", () => {
  it.scoped("an HTML page: its title, and the main content's text without scripts, styles, navigation or images", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ "/fair": html(article) })
      const page = yield* reader({ "news.example": ["127.0.0.1"] }).read(`http://news.example:${port}/fair`)
      assert.strictEqual(page.title, "Town fair & more")
      assert.include(page.text, "The town fair")
      assert.include(page.text, "Three things happened at the fair.")
      assert.include(page.text, "Cakes")
      for (const absent of ["track()", "color: red", "Home", "© Town", "x.png", "/fair"]) assert.notInclude(page.text, absent)
      assert.deepStrictEqual([page.status, page.content_type, page.charset, page.cut, page.truncated_bytes], [200, "text/html", "utf-8", null, false])
    }))

  it.scoped("https: a server whose certificate is not trusted is refused (tls_failed), nothing read", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "deixis-tls-"))),
        (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
      )
      // A self-signed certificate for news.example: no CA the reader trusts signed it.
      execFileSync("openssl", [
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=news.example",
        "-addext", "subjectAltName=DNS:news.example", "-keyout", path.join(dir, "key.pem"), "-out", path.join(dir, "cert.pem")
      ], { stdio: "ignore" })
      let served = 0
      const server = yield* Effect.acquireRelease(
        Effect.async<https.Server>((resume) => {
          const s = https.createServer({ key: fs.readFileSync(path.join(dir, "key.pem")), cert: fs.readFileSync(path.join(dir, "cert.pem")) }, (_, res) => {
            served++
            res.writeHead(200, { "content-type": "text/plain" }).end("secret")
          })
          s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
        }),
        (s) => Effect.async<void>((resume) => void s.close(() => resume(Effect.void)))
      )
      const port = (server.address() as net.AddressInfo).port
      const error = yield* failure(reader({ "news.example": ["127.0.0.1"] }).read(`https://news.example:${port}/`))
      assert.strictEqual(error.reason, "tls_failed", error.message)
      assert.strictEqual(served, 0)
    }))

  it.scoped("text/plain is read as it is", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ "/notes.txt": html("line one\r\nline two\n", "text/plain") })
      const page = yield* reader({ "news.example": ["127.0.0.1"] }).read(`http://news.example:${port}/notes.txt`)
      assert.deepStrictEqual([page.title, page.text], [null, "line one\nline two"])
    }))

  it.scoped("the charset the header declares is decoded (windows-1251), and one a <meta> declares (koi8-r)", () =>
    Effect.gen(function*() {
      const cyrillic = "Привет, мир"
      const encode = (label: string) => Buffer.from(new Uint8Array([...cyrillic].map((c) => (label === "windows-1251" ? cp1251(c) : koi8r(c)))))
      const { port } = yield* serve({
        "/header": (_, r) => void r.writeHead(200, { "content-type": "text/plain; charset=windows-1251" }).end(encode("windows-1251")),
        "/meta": (_, r) =>
          void r.writeHead(200, { "content-type": "text/html" }).end(Buffer.concat([
            Buffer.from("<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=KOI8-R\"></head><body><p>"),
            encode("koi8-r"),
            Buffer.from("</p></body></html>")
          ]))
      })
      const read = reader({ "news.example": ["127.0.0.1"] }).read
      const header = yield* read(`http://news.example:${port}/header`)
      assert.deepStrictEqual([header.text, header.charset], [cyrillic, "windows-1251"])
      const meta = yield* read(`http://news.example:${port}/meta`)
      assert.deepStrictEqual([meta.text, meta.charset], [cyrillic, "koi8-r"])
    }))

  it.scoped("an unknown declared charset is a typed error", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ "/": html("x", "text/plain; charset=x-no-such-charset") })
      assert.strictEqual((yield* failure(reader({ "news.example": ["127.0.0.1"] }).read(`http://news.example:${port}/`))).reason, "unsupported_charset")
    }))

  it.scoped("a gzip body is decoded", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({
        "/": (_, r) => void r.writeHead(200, { "content-type": "text/html", "content-encoding": "gzip" }).end(zlib.gzipSync(article))
      })
      const page = yield* reader({ "news.example": ["127.0.0.1"] }).read(`http://news.example:${port}/`)
      assert.strictEqual(page.title, "Town fair & more")
    }))

  it.scoped("at most max_bytes are read: a longer body is cut, said so, and its connection closed", () =>
    Effect.gen(function*() {
      const big = `<html><body><p>${"word ".repeat(400_000)}</p></body></html>` // about 2 MB
      const served = yield* serve({ "/": html(big) })
      const page = yield* reader({ "news.example": ["127.0.0.1"] }, { max_bytes: 64 * 1024 }).read(`http://news.example:${served.port}/`)
      assert.isTrue(page.truncated_bytes)
      assert.strictEqual(page.bytes, 64 * 1024)
      assert.isAtMost(served.closed(), 1)
    }))

  it.scoped("a compressed body that inflates past the bound is cut at the bound (a zip bomb reads no more)", () =>
    Effect.gen(function*() {
      const bomb = zlib.gzipSync(Buffer.alloc(20 * 1024 * 1024, 0x61)) // 20 MiB of "a" in about 20 KB
      const { port } = yield* serve({ "/": (_, r) => void r.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" }).end(bomb) })
      const page = yield* reader({ "news.example": ["127.0.0.1"] }, { max_bytes: 256 * 1024 }).read(`http://news.example:${port}/`)
      assert.deepStrictEqual([page.bytes, page.truncated_bytes], [256 * 1024, true])
    }))

  it.scopedLive("a server that never answers is given up after the timeout", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ "/slow": () => undefined })
      const started = Date.now()
      const error = yield* failure(reader({ "news.example": ["127.0.0.1"] }, { timeout: 300 }).read(`http://news.example:${port}/slow`))
      assert.strictEqual(error.reason, "timeout")
      assert.isAtLeast(Date.now() - started, 250)
    }))

  it.scoped("only text/html and text/plain: a PDF or a body without a type is refused", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({
        "/doc.pdf": html("%PDF-1.7", "application/pdf"),
        "/untyped": (_, r) => void r.writeHead(200).end("what am I")
      })
      const read = reader({ "news.example": ["127.0.0.1"] }).read
      assert.strictEqual((yield* failure(read(`http://news.example:${port}/doc.pdf`))).reason, "unsupported_content_type")
      assert.strictEqual((yield* failure(read(`http://news.example:${port}/untyped`))).reason, "unsupported_content_type")
    }))

  it.scoped("an error status is a typed error carrying the status", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({})
      const error = yield* failure(reader({ "news.example": ["127.0.0.1"] }).read(`http://news.example:${port}/missing`))
      assert.deepStrictEqual([error.reason, error.status], ["http_status", 404])
    }))

  it.scoped("the text is cut to the token budget, and the cut is said", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ "/": html(`<p>${"many words here ".repeat(500)}</p>`, "text/html") })
      const page = yield* reader({ "news.example": ["127.0.0.1"] }, { max_tokens: 50 }).read(`http://news.example:${port}/`)
      assert.isAtMost(page.tokens, 50)
      assert.match(page.cut ?? "", /^the text was cut to about \d+ of about \d+ tokens/)
    }))

  it.scoped("one log line per read — host, status, bytes, time — never the path or the query; the metrics count it", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ "/private/path": html("<title>t</title>") })
      const lines: Array<string> = []
      const logger = Logger.make(({ annotations, message }) => {
        lines.push(JSON.stringify({ message, annotations: Object.fromEntries([...annotations]) }))
      })
      const ok = Metric.tagged(UrlReader.reads, "outcome", "ok")
      const before = (yield* Metric.value(ok)).count
      const records: Array<UrlReader.FetchRecord> = []
      yield* reader({ "news.example": ["127.0.0.1"] }, {}, (r) => records.push(r)).read(`http://news.example:${port}/private/path?token=s3cret`).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
      assert.strictEqual(lines.length, 1)
      const line = JSON.parse(lines[0]!) as { annotations: Record<string, unknown> }
      assert.deepStrictEqual(
        [line.annotations["host"], line.annotations["outcome"], line.annotations["status"], typeof line.annotations["bytes"], typeof line.annotations["ms"]],
        ["news.example", "ok", 200, "number", "number"]
      )
      for (const secret of ["s3cret", "private", "token"]) assert.notInclude(lines[0]!, secret)
      assert.strictEqual((yield* Metric.value(ok)).count, before + 1)
      assert.deepStrictEqual(records.map((r) => [r.host, r.outcome, r.status]), [["news.example", "ok", 200]])
    }))
})

describe("read_url's configuration", () => {
  it("defaults: 10 seconds, 1 MiB, 3 redirects, 2000 tokens, no host allowed", () => {
    assert.deepStrictEqual(UrlReader.defaults, { allow_hosts: [], timeout: 10_000, max_bytes: 1024 * 1024, max_redirects: 3, max_tokens: 2000 })
  })

  it.effect("DEIXIS_FETCH_ALLOW_HOSTS lists hosts, compared in lower case without brackets", () =>
    Effect.gen(function*() {
      const settings = yield* Effect.withConfigProvider(
        UrlReader.config,
        ConfigProvider.fromMap(new Map([["DEIXIS_FETCH_ALLOW_HOSTS", "Wiki.Example, [::1] ,127.0.0.1"]]))
      )
      assert.deepStrictEqual(settings.allow_hosts, ["wiki.example", "::1", "127.0.0.1"])
    }))

  it.scoped("an allowed loopback address is read", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ "/": html("<title>local</title>") })
      const page = yield* reader({}, { allow_hosts: ["127.0.0.1"] }).read(`http://127.0.0.1:${port}/`)
      assert.strictEqual(page.title, "local")
      assert.deepStrictEqual([...new Set(guard.asked.map((a) => a.address))], ["127.0.0.1"])
    }))
})

// Windows-1251 and KOI8-R bytes of Cyrillic letters (and ASCII as it is).
function cp1251(c: string): number {
  const code = c.charCodeAt(0)
  if (code < 0x80) return code
  if (code >= 0x410 && code <= 0x44f) return code - 0x410 + 0xc0
  throw new Error(`no cp1251 for ${c}`)
}
function koi8r(c: string): number {
  if (c.charCodeAt(0) < 0x80) return c.charCodeAt(0)
  const table = "юабцдефгхийклмнопярстужвьызшэщчъЮАБЦДЕФГХИЙКЛМНОПЯРСТУЖВЬЫЗШЭЩЧЪ"
  const i = table.indexOf(c)
  if (i < 0) throw new Error(`no koi8-r for ${c}`)
  return 0xc0 + i
}
