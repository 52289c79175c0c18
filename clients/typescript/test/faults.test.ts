// The client against servers that misbehave, started here on loopback: one
// that never answers, one that resets, one that answers 502 then 201, one
// that answers 500 then 201; and the defaults a production caller relies on.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { test } from "node:test";

import {
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  DEFAULT_TIMEOUT_MS,
  PetstoreClient,
  PetstoreError,
  PetstoreNetworkError,
  PetstoreTimeoutError,
  VERSION,
  type Attempt,
} from "../src/index.js";

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

test("the defaults: 30 s an attempt, 80 s a call, the package's version in User-Agent", () => {
  assert.equal(DEFAULT_ATTEMPT_TIMEOUT_MS, 30_000);
  assert.equal(DEFAULT_TIMEOUT_MS, 80_000);
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  assert.equal(VERSION, pkg.version);
});

test("a server that never answers: each attempt times out and is retried, then a PetstoreTimeoutError", async () => {
  let attempts = 0;
  const server = createServer(() => {
    attempts++; // and never answer
  });
  const url = await listen(server);
  try {
    const heard: Attempt[] = [];
    const client = new PetstoreClient({ baseUrl: `${url}/v1`, apiKey: "pet_x", attemptTimeoutMs: 100, maxAttempts: 3, minBackoffMs: 5, maxBackoffMs: 20, onAttempt: (a) => heard.push(a) });
    const start = Date.now();
    const error = await client.listPage().then(() => assert.fail("answered"), (e: unknown) => e);
    const elapsed = Date.now() - start;
    assert.ok(error instanceof PetstoreTimeoutError, String(error));
    assert.equal(error.attempts, 3);
    assert.equal(error.attempt, true);
    assert.ok(elapsed >= 300 && elapsed < 3000, `three attempts of 100 ms took ${elapsed} ms`);
    // Each attempt ran its 100 ms and was abandoned. (How many reached the
    // server's handler within their 100 ms depends on the machine's load.)
    assert.ok(attempts >= 1, "no attempt reached the server");
    assert.equal(heard.length, 3);
    for (const a of heard) assert.ok(a.durationMs >= 90 && a.error !== undefined, JSON.stringify(a));
    assert.equal(heard[2]?.status, undefined);

    // The call's own deadline, for one call.
    const start2 = Date.now();
    const error2 = await client.listPage({}, { timeoutMs: 150, attemptTimeoutMs: 60_000 }).then(() => assert.fail("answered"), (e: unknown) => e);
    assert.ok(error2 instanceof PetstoreTimeoutError && !error2.attempt && error2.attempts === 1, String(error2));
    assert.ok(Date.now() - start2 < 2000);

    // The caller's abort is the caller's.
    const abort = new AbortController();
    setTimeout(() => abort.abort(new Error("the caller gave up")), 50);
    await assert.rejects(client.listPage({}, { signal: abort.signal }), /the caller gave up/);
  } finally {
    await close(server);
  }
});

test("a server that resets: retried, then a PetstoreNetworkError with the attempts and the last request id", async () => {
  let connections = 0;
  const server = createServer((req, res) => {
    connections++;
    if (connections === 1) {
      res.writeHead(503, { "Request-Id": "first-503", "Retry-After": "0", Connection: "close" }).end();
      return;
    }
    (req.socket as Socket).resetAndDestroy();
  });
  const url = await listen(server);
  try {
    const client = new PetstoreClient({ baseUrl: `${url}/v1`, apiKey: "pet_x", maxAttempts: 3, minBackoffMs: 5, maxBackoffMs: 20 });
    const error = await client.createPet({ name: "Rex", categoryId: 1 }).then(() => assert.fail("answered"), (e: unknown) => e);
    assert.ok(error instanceof PetstoreNetworkError, String(error));
    assert.equal(error.attempts, 3);
    assert.equal(error.requestId, "first-503");
    assert.match(error.message, /no answer after 3 attempts/);
    assert.equal(connections, 3);
  } finally {
    await close(server);
  }
});

test("a 502 then a 201: the create is retried with the same key, and the answer's metadata comes with the pet", async () => {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    if (seen.length === 1) {
      res.writeHead(502, { "Content-Type": "text/html" }).end("<h1>502 Bad Gateway</h1>");
      return;
    }
    res
      .writeHead(201, {
        "Content-Type": "application/json",
        "Request-Id": "the-201",
        "Idempotent-Replayed": "true",
        "X-RateLimit-Limit": "300",
        "X-RateLimit-Remaining": "297",
        "X-RateLimit-Reset": "2000000000",
      })
      .end(JSON.stringify({ id: 100000000000001, name: "Rex", categoryId: 1, status: "available" }));
  });
  const url = await listen(server);
  try {
    const client = new PetstoreClient({ baseUrl: `${url}/v1`, apiKey: "pet_x", minBackoffMs: 5, maxBackoffMs: 20, userAgent: "shop/2", headers: { "X-Shop": "s" } });
    const pet = await client.createPet({ name: "Rex", categoryId: 1 }, { headers: { "X-Trace": "t1" } });
    assert.equal(pet.id, 100000000000001);
    const { response } = pet;
    assert.equal(response.attempts, 2);
    assert.equal(response.requestId, "the-201");
    assert.equal(response.replayed, true);
    assert.equal(response.rateLimit.remaining, 297);
    assert.equal(response.headers.get("Request-Id"), "the-201");
    // The answer rides with the pet, unseen by JSON and by a comparison of the pet.
    assert.equal(JSON.stringify(pet), JSON.stringify({ id: 100000000000001, name: "Rex", categoryId: 1, status: "available" }));
    assert.deepStrictEqual(pet, { id: 100000000000001, name: "Rex", categoryId: 1, status: "available" });
    assert.equal(seen.length, 2);
    assert.ok(seen[0]?.["idempotency-key"]);
    assert.equal(seen[0]?.["idempotency-key"], seen[1]?.["idempotency-key"]);
    for (const h of seen) {
      assert.equal(h["user-agent"], `shop/2 petstore-ts/${VERSION}`);
      assert.equal(h["x-trace"], "t1");
      assert.equal(h["x-shop"], "s");
    }
  } finally {
    await close(server);
  }
});

test("429, 500, 502, 503 and 504 are retried after Retry-After; a 400 is not, and its error carries the answer's headers", async () => {
  for (const status of [429, 500, 502, 503, 504, 400]) {
    let calls = 0;
    const server = createServer((_req, res) => {
      calls++;
      if (calls === 1) {
        res.writeHead(status, { "Content-Type": "application/json", "Retry-After": "1", "Request-Id": `r${status}` }).end(JSON.stringify({ code: "invalid_request", message: "m", status }));
        return;
      }
      res.writeHead(200, { "Content-Type": "application/json" }).end("[]");
    });
    const url = await listen(server);
    try {
      const client = new PetstoreClient({ baseUrl: `${url}/v1`, apiKey: "pet_x" });
      const start = Date.now();
      const result = await client.listPage().then((page) => page, (e: unknown) => e);
      if (status === 400) {
        assert.ok(result instanceof PetstoreError, String(result));
        assert.equal(result.headers.get("Retry-After"), "1");
        assert.equal(result.attempts, 1);
        assert.equal(calls, 1);
      } else {
        assert.ok(!(result instanceof Error), `${status}: ${String(result)}`);
        assert.equal(calls, 2);
        assert.ok(Date.now() - start >= 1000, `${status}: retried before Retry-After`);
      }
    } finally {
      await close(server);
    }
  }
});

test("a 500 then a 201: the create is retried with the same key, and a read's answer comes with its value too", async () => {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    if (req.method === "POST" && seen.length === 1) {
      res.writeHead(500, { "Content-Type": "application/json", "Request-Id": "the-500" })
        .end(JSON.stringify({ code: "internal_error", message: "Something went wrong on our side.", status: 500 }));
      return;
    }
    const pet = { id: 100000000000002, name: "Rex", categoryId: 1, status: "available" };
    res.writeHead(req.method === "POST" ? 201 : 200, { "Content-Type": "application/json", "Request-Id": `the-${req.method}` }).end(JSON.stringify(pet));
  });
  const url = await listen(server);
  try {
    const waits: number[] = [];
    const client = new PetstoreClient({ baseUrl: `${url}/v1`, apiKey: "pet_x", minBackoffMs: 5, maxBackoffMs: 20, onWait: (w) => waits.push(w.status ?? 0) });
    const pet = await client.createPet({ name: "Rex", categoryId: 1 });
    assert.equal(pet.id, 100000000000002);
    assert.equal(pet.response.attempts, 2);
    assert.equal(pet.response.requestId, "the-POST");
    assert.deepEqual(waits, [500]);
    assert.equal(seen.length, 2);
    assert.ok(seen[0]?.["idempotency-key"]);
    assert.equal(seen[0]?.["idempotency-key"], seen[1]?.["idempotency-key"]);

    const got = await client.getPet(pet.id);
    assert.equal(got.response.requestId, "the-GET");
    assert.equal(got.response.status, 200);
    assert.equal(JSON.stringify(got), JSON.stringify({ id: 100000000000002, name: "Rex", categoryId: 1, status: "available" }));
  } finally {
    await close(server);
  }
});
