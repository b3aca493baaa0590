/** The baseline: a bare node:http server answering a constant JSON body. */
import { createServer } from "node:http"

const body = JSON.stringify({ status: "resolved", confidence: 0.8, reasons: ["same_topic"] })
createServer((request, response) => {
  request.resume()
  request.on("end", () => {
    response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    response.end(body)
  })
}).listen(Number(process.env["PORT"]), "127.0.0.1")
