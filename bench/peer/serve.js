// Starts @vercel/cosmosdb-server as its own CLI does (`cosmosdb-server --no-ssl -p PORT`), but
// with HTTP keep-alive on. Its CLI answers every request with `connection: close`, which would
// make the benchmark measure TCP set-up rather than the server; keep-alive is the peer at its
// best, so every ratio against it is conservative. Usage: node serve.js PORT [plain|tls]
"use strict";
const { createHttpServer, createHttpsServer } = require("@vercel/cosmosdb-server");

const port = parseInt(process.argv[2] || "0", 10);
const tls = process.argv[3] === "tls";
const create = tls ? createHttpsServer : createHttpServer;
const server = create({ keepAlive: true }).listen(port, "127.0.0.1", () => {
  const address = server.address();
  console.log(`Ready to accept HTTP${tls ? "S" : ""} connections at 127.0.0.1:${address.port}`);
});
