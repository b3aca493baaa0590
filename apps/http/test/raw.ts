/**
 * HTTP/1.1 over a raw TCP socket (node:net), for what fetch will not send: any request target
 * byte for byte (absolute-form, `//`, dot segments, percent-escapes), chunked bodies cut
 * anywhere, and a look at how the server ends the connection.
 */
import { connect, type Socket } from "node:net"

export interface RawRequest {
  readonly method: string
  readonly target: string
  readonly headers?: Record<string, string>
  /** Sent with Content-Length, unless `chunked`. */
  readonly body?: string | Buffer
  /** Send the body with Transfer-Encoding: chunked, in chunks of this many bytes. */
  readonly chunked?: number
  /** Leave the request unfinished: no terminating chunk / the body cut short. */
  readonly unfinished?: boolean
}

export interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
  /** Whether the server ended the connection after this response. */
  readonly closed: boolean
  /** Whether the connection was reset (ECONNRESET) rather than closed. */
  readonly reset: boolean
}

const head = (request: RawRequest, port: number, length?: number) => {
  const headers: Record<string, string> = { host: `127.0.0.1:${port}`, ...request.headers }
  if (request.chunked !== undefined) headers["transfer-encoding"] = "chunked"
  else if (length !== undefined) headers["content-length"] = String(length)
  return `${request.method} ${request.target} HTTP/1.1\r\n` +
    Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("") + "\r\n"
}

/** Parses one response from what the socket delivered; undefined while incomplete. */
const parse = (data: Buffer, ended: boolean, method: string): Omit<RawResponse, "closed" | "reset"> | undefined => {
  const end = data.indexOf("\r\n\r\n")
  if (end === -1) return undefined
  const lines = data.subarray(0, end).toString("latin1").split("\r\n")
  const status = Number(lines[0]!.split(" ")[1])
  const headers: Record<string, string> = {}
  for (const line of lines.slice(1)) {
    const i = line.indexOf(":")
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
  }
  const rest = data.subarray(end + 4)
  if (method === "HEAD") return { status, headers, body: "" }
  if (headers["content-length"] !== undefined) {
    const n = Number(headers["content-length"])
    return rest.length >= n ? { status, headers, body: rest.subarray(0, n).toString("utf8") } : undefined
  }
  if (headers["transfer-encoding"] === "chunked") {
    let body = ""
    let at = 0
    for (;;) {
      const lineEnd = rest.indexOf("\r\n", at)
      if (lineEnd === -1) return undefined
      const size = parseInt(rest.subarray(at, lineEnd).toString("latin1"), 16)
      if (size === 0) return { status, headers, body }
      if (rest.length < lineEnd + 2 + size + 2) return undefined
      body += rest.subarray(lineEnd + 2, lineEnd + 2 + size).toString("utf8")
      at = lineEnd + 2 + size + 2
    }
  }
  if (status === 204 || status === 304 || status < 200) return { status, headers, body: "" }
  return ended ? { status, headers, body: rest.toString("utf8") } : undefined
}

/**
 * Sends one request and reads one response. Resolves once the response is complete and the
 * server has either closed the connection or kept it open for `settleMs`.
 */
export const raw = (port: number, request: RawRequest, settleMs = 50): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const socket: Socket = connect(port, "127.0.0.1")
    let data = Buffer.alloc(0)
    let reset = false
    let settled = false
    let timer: NodeJS.Timeout | undefined
    const finish = (closed: boolean) => {
      if (settled) return
      const response = parse(data, true, request.method)
      if (response === undefined) {
        settled = true
        socket.destroy()
        return reject(new Error(`no complete response (${reset ? "reset" : "closed"}): ${JSON.stringify(data.toString("latin1").slice(0, 200))}`))
      }
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve({ ...response, closed, reset })
    }
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      if (parse(data, false, request.method) !== undefined && timer === undefined) timer = setTimeout(() => finish(false), settleMs)
    })
    socket.on("end", () => finish(true))
    socket.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "ECONNRESET" || error.code === "EPIPE") reset = true
      else if (!settled) return reject(error)
    })
    socket.on("close", () => finish(true))
    socket.on("connect", () => {
      const body = request.body === undefined ? Buffer.alloc(0) : Buffer.from(request.body)
      socket.write(head(request, port, request.body === undefined ? undefined : body.length))
      if (request.chunked === undefined) {
        socket.write(request.unfinished === true ? body.subarray(0, Math.floor(body.length / 2)) : body)
        return
      }
      const size = request.chunked
      const writeFrom = (offset: number): void => {
        while (offset < body.length) {
          const piece = body.subarray(offset, offset + size)
          offset += piece.length
          const ok = socket.write(`${piece.length.toString(16)}\r\n`) && socket.write(piece) && socket.write("\r\n")
          if (!ok) {
            socket.once("drain", () => writeFrom(offset))
            return
          }
        }
        if (request.unfinished !== true) socket.write("0\r\n\r\n")
      }
      writeFrom(0)
    })
  })

/** Sends `text` as it is (a whole request, framing included) and reads one response. */
export const exchange = (port: number, text: string, settleMs = 50): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const socket: Socket = connect(port, "127.0.0.1")
    let data = Buffer.alloc(0)
    let timer: NodeJS.Timeout | undefined
    let settled = false
    const finish = (closed: boolean) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      const response = parse(data, true, "GET")
      if (response === undefined) return reject(new Error(`no complete response: ${JSON.stringify(data.toString("latin1").slice(0, 200))}`))
      resolve({ ...response, closed, reset: false })
    }
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      if (parse(data, false, "GET") !== undefined && timer === undefined) timer = setTimeout(() => finish(false), settleMs)
    })
    socket.on("error", () => {})
    socket.on("close", () => finish(true))
    socket.on("connect", () => socket.write(text))
  })
