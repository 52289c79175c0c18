// The client against the real petstore binary (test/server.ts): paging,
// idempotent retries, waits for Retry-After, typed errors with their
// Request-Id, a success's Request-Id, and a real webhook delivery verified.

import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { Webhook } from "standardwebhooks";

import { PetstoreClient, PetstoreError, verifyWebhook, WebhookVerificationError, type Pet, type ResponseInfo, type Wait } from "../src/index.js";
import { Petstore } from "./server.js";

let server: Petstore;
let key: string;

before(async () => {
  server = await Petstore.start(["--webhooks-allow-private"], [["superuser", "upsert", "staff@example.com", "a long enough password"]]);
  key = await server.createKey("--plan", "business");
});

after(async () => {
  await server?.stop();
});

function client(options: Partial<ConstructorParameters<typeof PetstoreClient>[0]> = {}): PetstoreClient {
  return new PetstoreClient({ baseUrl: `${server.url}/v1`, apiKey: key, ...options });
}

async function rejection(promise: Promise<unknown>): Promise<PetstoreError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof PetstoreError, `want a PetstoreError, got ${String(error)}`);
    return error;
  }
  assert.fail("the call succeeded");
}

/**
 * A proxy in front of the server: `answer` may answer a request itself
 * (return true) or leave it to be forwarded; `afterForward` sees the
 * server's answer before it is passed on and may drop it (return true).
 */
async function proxy(handlers: {
  answer?: (req: IncomingMessage, res: ServerResponse, n: number) => boolean;
  afterForward?: (req: IncomingMessage, res: ServerResponse, n: number) => boolean;
}): Promise<{ url: string; seen: IncomingHttpHeaders[]; close: () => Promise<void> }> {
  const seen: IncomingHttpHeaders[] = [];
  const http: Server = createServer(async (req, res) => {
    seen.push(req.headers);
    const n = seen.length;
    if (handlers.answer?.(req, res, n)) return;
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === "string" && name !== "host" && name !== "connection") headers.set(name, value);
    }
    const init: RequestInit = { method: req.method ?? "GET", headers };
    if (chunks.length > 0) init.body = Buffer.concat(chunks);
    const answer = await fetch(server.url + req.url, init);
    const body = Buffer.from(await answer.arrayBuffer());
    if (handlers.afterForward?.(req, res, n)) return;
    answer.headers.forEach((value, name) => {
      if (name !== "content-length" && name !== "connection" && name !== "keep-alive" && name !== "transfer-encoding") res.setHeader(name, value);
    });
    res.writeHead(answer.status).end(body);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    seen,
    close: () => new Promise((resolve) => http.close(() => resolve())),
  };
}

test("listPets walks 250 pets through Link, once each in id order, and resumes from a page's cursor", async () => {
  const petstore = client();
  const created = new Set<number>();
  for (let i = 0; i < 250; i += 25) {
    const batch = await Promise.all(
      Array.from({ length: 25 }, (_, j) => petstore.createPet({ name: `Paged ${i + j}`, categoryId: 3, status: "pending" })),
    );
    for (const pet of batch) created.add(pet.id);
  }
  assert.equal(created.size, 250);

  const answers: ResponseInfo[] = [];
  const walked: number[] = [];
  for await (const pet of petstore.listPets({ status: "pending", limit: 100 }, { onResponse: (info) => answers.push(info) })) {
    assert.equal(pet.status, "pending");
    walked.push(pet.id);
  }
  assert.equal(answers.length, 3, "pages of 100, 100 and 50");
  assert.deepEqual(walked, [...created].sort((a, b) => a - b));

  // Stop after a page, then resume from its cursor.
  const pages = petstore.listPages({ status: "pending", limit: 100 });
  const first = await pages.next();
  await pages.return();
  assert.ok(!first.done && first.value.nextCursor, "the first page names the next");
  const rest: number[] = [];
  for await (const pet of petstore.listPets({ status: "pending", limit: 100, cursor: first.value.nextCursor })) rest.push(pet.id);
  assert.deepEqual([...first.value.items.map((p) => p.id), ...rest], walked);

  // The README's resume: the cursor kept is a `string | undefined`, passed
  // back as it is (it compiles under exactOptionalPropertyTypes too).
  let saved: string | undefined;
  const kept: number[] = [];
  for await (const page of petstore.listPages({ status: "pending", limit: 100, cursor: saved })) {
    kept.push(...page.items.map((p) => p.id));
    saved = page.nextCursor;
    break;
  }
  assert.ok(saved, "the first page names the next");
  for await (const page of petstore.listPages({ status: "pending", limit: 100, cursor: saved })) {
    kept.push(...page.items.map((p) => p.id));
    saved = page.nextCursor;
  }
  assert.equal(saved, undefined, "undefined on the last page");
  assert.deepEqual(kept, walked);
});

test("listCategories walks the named categories through Link", async () => {
  for (const [id, name] of [["3", "Cats"], ["7", "Dogs"], ["11", "Fish"]] as const) {
    await server.run("categories", "create", "--id", id, "--name", name);
  }
  const pages: number[] = [];
  const walked = [];
  for await (const page of client().listCategoryPages({ limit: 2 })) {
    pages.push(page.items.length);
    walked.push(...page.items);
  }
  assert.deepEqual(pages, [2, 1]);
  assert.deepEqual(walked, [{ id: 3, name: "Cats" }, { id: 7, name: "Dogs" }, { id: 11, name: "Fish" }]);
  const all = [];
  for await (const category of client().listCategories()) all.push(category);
  assert.deepEqual(all, walked);
});

test("getUsage reads the caller's own use and windows", async () => {
  const own = await server.createKey("--plan", "free");
  const petstore = client({ apiKey: own });
  await petstore.listPage({ limit: 1 });
  await petstore.listPage({ limit: 2 });
  const refused = await rejection(petstore.listPage({ limit: 0 }));
  assert.equal(refused.code, "invalid_request");
  const usage = await petstore.getUsage();
  const today = new Date().toISOString().slice(0, 10);
  const counts = { requests: 3, served: 2, refused: 1, limited: 0, failed: 0 };
  assert.equal(usage.plan, "free");
  assert.deepEqual(usage.today, { day: today, ...counts });
  assert.deepEqual(usage.month, { month: today.slice(0, 7), ...counts });
  assert.equal(usage.days.length, 30);
  assert.deepEqual(usage.days[29], usage.today);
  assert.equal(usage.limits.perDay.limit - usage.limits.perDay.remaining, 4, "the day window counts this request too");
  assert.ok(Date.parse(usage.limits.perDay.reset) > Date.now());
  // Its answer comes with it: the headers' day window agrees with the body's.
  assert.match(usage.response.requestId ?? "", /^[0-9a-f]{32}$/);
  assert.equal(usage.response.rateLimit.windows.find((w) => w.name === "day")?.remaining, usage.limits.perDay.remaining);
});

test("the client revalidates what it read: a 304 returns the kept answer until a commit changes it", async () => {
  const statuses: number[] = [];
  const infos: ResponseInfo[] = [];
  const petstore = client();
  const call = { onResponse: (info: ResponseInfo) => { statuses.push(info.status); infos.push(info); } };
  const walk = async () => {
    statuses.length = 0;
    const names: string[] = [];
    for await (const page of petstore.listPages({ limit: 100 }, call)) names.push(...page.items.map((pet) => pet.name));
    return { statuses: [...statuses], names };
  };

  const pet = await petstore.createPet({ name: "Revalidated", categoryId: 5 });
  const first = await walk();
  const again = await walk();
  assert.ok(first.statuses.every((status) => status === 200), `first walk: ${first.statuses}`);
  assert.deepEqual(again.statuses, first.statuses.map(() => 304));
  assert.deepEqual(again.names, first.names);
  const last = infos.at(-1);
  assert.ok(last?.requestId && last.rateLimit.remaining !== undefined && last.headers.get("ETag"), "a 304 reports its own request id, rate limit and ETag");

  await petstore.createPet({ name: "Newest", categoryId: 5 });
  const changed = await walk();
  assert.equal(changed.statuses.at(-1), 200, `after a create, the last page: ${changed.statuses}`);
  assert.deepEqual(changed.names, [...first.names, "Newest"]);

  statuses.length = 0;
  const got = await petstore.getPet(pet.id, call);
  const kept = await petstore.getPet(pet.id, call);
  assert.deepEqual(statuses, [200, 304]);
  assert.deepEqual(kept, got);

  await server.run("categories", "create", "--id", "41", "--name", "Newts");
  const categories = async () => {
    statuses.length = 0;
    const all = [];
    for await (const page of petstore.listCategoryPages({ limit: 100 }, call)) all.push(...page.items);
    return { statuses: [...statuses], names: all.map((category) => category.name) };
  };
  await categories();
  assert.deepEqual((await categories()).statuses, [304]);
  await server.run("categories", "rename", "41", "Salamanders");
  const renamed = await categories();
  assert.deepEqual(renamed.statuses, [200]);
  assert.ok(renamed.names.includes("Salamanders"), `after a rename: ${renamed.names}`);

  statuses.length = 0;
  const none = client({ revalidationEntries: 0 });
  await none.getPet(pet.id, call);
  await none.getPet(pet.id, call);
  assert.deepEqual(statuses, [200, 200], "revalidationEntries: 0 keeps nothing");
});

test("createPet retries a lost answer with the same Idempotency-Key and adds the pet once", async () => {
  const lossy = await proxy({
    // The first create reaches the service; its answer is lost with the connection.
    afterForward: (req, res, n) => {
      if (n === 1) res.socket?.destroy();
      return n === 1;
    },
  });
  try {
    const waits: Wait[] = [];
    const answers: ResponseInfo[] = [];
    const pet = await client({ baseUrl: lossy.url, minBackoffMs: 10, onWait: (w) => waits.push(w) }).createPet(
      { name: "Once only", categoryId: 9, status: "sold" },
      { onResponse: (info) => answers.push(info) },
    );
    assert.equal(lossy.seen.length, 2);
    const [firstKey, secondKey] = lossy.seen.map((h) => h["idempotency-key"]);
    assert.ok(firstKey, "an Idempotency-Key by default");
    assert.equal(secondKey, firstKey);
    assert.equal(waits.length, 1);
    assert.equal(waits[0]?.status, undefined);
    assert.ok(waits[0]?.error, "the wait names the network error");
    assert.equal(answers[0]?.replayed, true, "the retry got the first request's answer again");

    const sold: Pet[] = [];
    for await (const p of client().listPets({ status: "sold", limit: 100 })) if (p.name === "Once only") sold.push(p);
    assert.deepEqual(sold, [pet]);
  } finally {
    await lossy.close();
  }

  // The caller's own key: the same body again is a replay; another body is refused.
  const petstore = client();
  const first = await petstore.createPet({ name: "Keyed", categoryId: 2 }, { idempotencyKey: "ts-keyed-1" });
  const again = await petstore.createPet({ name: "Keyed", categoryId: 2 }, { idempotencyKey: "ts-keyed-1" });
  assert.deepEqual(again, first);
  const reused = await rejection(petstore.createPet({ name: "Other", categoryId: 2 }, { idempotencyKey: "ts-keyed-1" }));
  assert.equal(reused.status, 422);
  assert.equal(reused.code, "idempotency_key_reused");
});

test("a 429 with a Retry-After within the bound is waited for, then the call goes on", async () => {
  const limited = await proxy({
    answer: (_req, res, n) => {
      if (n !== 1) return false;
      res.writeHead(429, { "Content-Type": "application/json", "Retry-After": "1" });
      res.end('{"code":"rate_limit_exceeded","message":"Rate limit exceeded: retry after 1 seconds.","status":429}');
      return true;
    },
  });
  try {
    const waits: Wait[] = [];
    const began = Date.now();
    const page = await client({ baseUrl: limited.url, onWait: (w) => waits.push(w) }).listPage({ limit: 1 });
    assert.ok(Date.now() - began >= 1000, `answered after ${Date.now() - began} ms, before Retry-After`);
    assert.equal(page.items.length, 1);
    assert.equal(waits.length, 1);
    assert.deepEqual({ status: waits[0]?.status, delayMs: waits[0]?.delayMs, retryAfter: waits[0]?.retryAfter }, { status: 429, delayMs: 1000, retryAfter: true });
  } finally {
    await limited.close();
  }
});

test("the service's 429 beyond the bound comes back at once with its Retry-After and rate-limit state", async () => {
  const petstore = client({ apiKey: await server.createKey("--plan", "free", "--per-minute", "2") });
  await petstore.listPage({ limit: 1 });
  await petstore.listPage({ limit: 1 });
  const began = Date.now();
  const limited = await rejection(petstore.listPage({ limit: 1 }));
  assert.ok(Date.now() - began < 1000, "no wait for a Retry-After of about a minute");
  assert.equal(limited.status, 429);
  assert.equal(limited.code, "rate_limit_exceeded");
  assert.ok(limited.retryAfterMs !== undefined && limited.retryAfterMs > 10_000, `Retry-After ${limited.retryAfterMs} ms`);
  assert.equal(limited.rateLimit.limit, 2);
  assert.equal(limited.rateLimit.remaining, 0);
  const minute = limited.rateLimit.windows.find((w) => w.name === "minute");
  assert.deepEqual({ limit: minute?.limit, periodSeconds: minute?.periodSeconds, remaining: minute?.remaining }, { limit: 2, periodSeconds: 60, remaining: 0 });
  assert.ok(limited.requestId);
});

test("a key without pets:write gets insufficient_scope, naming the scope", async () => {
  const reader = client({ apiKey: await server.createKey("--plan", "business", "--scopes", "pets:read") });
  const refused = await rejection(reader.createPet({ name: "Not allowed", categoryId: 1 }));
  assert.equal(refused.status, 403);
  assert.equal(refused.code, "insufficient_scope");
  assert.equal(refused.scope, "pets:write");
  assert.equal(refused.rateLimit.limit !== undefined, true);
});

test("an error carries the answer's Request-Id, and its message names it", async () => {
  const ids: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    const answer = await fetch(input, init);
    ids.push(answer.headers.get("Request-Id") ?? "");
    return answer;
  };
  const petstore = client({ fetch: recording });
  const created = await petstore.createPet({ name: "Deprecated fetch", categoryId: 4 });
  assert.deepEqual(await petstore.getPet(created.id), created);

  const missing = await rejection(petstore.getPet(Number.MAX_SAFE_INTEGER));
  assert.equal(missing.status, 404);
  assert.equal(missing.code, "not_found");
  const id = ids.at(-1);
  assert.ok(id, "the service sent a Request-Id");
  assert.equal(missing.requestId, id);
  assert.match(missing.message, new RegExp(`^petstore: 404 not_found: .+ \\(request ${id}\\)$`));
  assert.notEqual(ids[0], ids[1], "each answer has its own id");
});

test("a success reports its answer's Request-Id through onResponse, each page's in a walk", async () => {
  const ids: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    const answer = await fetch(input, init);
    ids.push(answer.headers.get("Request-Id") ?? "");
    return answer;
  };
  const petstore = client({ fetch: recording });
  const answers: ResponseInfo[] = [];
  const onResponse = (info: ResponseInfo) => answers.push(info);
  const pet = await petstore.createPet({ name: "Named", categoryId: 6 }, { onResponse });
  await petstore.getPet(pet.id, { onResponse });
  for await (const page of petstore.listPages({ limit: 100 }, { onResponse })) assert.ok(page.items.length > 0);
  for await (const category of petstore.listCategories({}, { onResponse })) assert.ok(category.name);
  assert.ok(answers.length >= 5, `${answers.length} answers`);
  assert.deepEqual(
    answers.map((a) => a.requestId),
    ids,
    "each answer's own id, in order",
  );
  for (const id of ids) assert.match(id, /^[0-9a-f]{32}$/);
  assert.equal(new Set(ids).size, ids.length, "each answer has its own id");
});

test("an answer that is not the API's has no code and asks about the base URL", async () => {
  const wrong = await rejection(new PetstoreClient({ baseUrl: server.url, apiKey: key }).listPage());
  assert.equal(wrong.status, 404);
  assert.equal(wrong.code, undefined);
  assert.match(wrong.message, /not the API's JSON.*base URL/);
});

test("a real delivery verifies with verifyWebhook, as with Standard Webhooks' own library", async () => {
  const deliveries: { headers: IncomingHttpHeaders; body: Buffer }[] = [];
  let delivered: () => void = () => {};
  const arrived = new Promise<void>((resolve) => (delivered = resolve));
  const receiver = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    deliveries.push({ headers: req.headers, body: Buffer.concat(chunks) });
    res.writeHead(204).end();
    delivered();
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  try {
    const auth = await fetch(`${server.url}/api/collections/_superusers/auth-with-password`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ identity: "staff@example.com", password: "a long enough password" }),
    });
    const { token } = (await auth.json()) as { token: string };
    const { port } = receiver.address() as AddressInfo;
    const endpoint = await fetch(`${server.url}/api/petstore/webhooks`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: token },
      body: JSON.stringify({ url: `http://127.0.0.1:${port}/hook`, events: ["pet.created"] }),
    });
    assert.equal(endpoint.status, 201);
    const { secret } = (await endpoint.json()) as { secret: string };

    const pet = await client().createPet({ name: "Hooked", categoryId: 5 });
    await Promise.race([arrived, new Promise((_, reject) => setTimeout(() => reject(new Error("no delivery within 10 s")), 10_000))]);
    const [delivery] = deliveries;
    assert.ok(delivery);

    const event = await verifyWebhook(secret, delivery.headers, delivery.body);
    assert.equal(event.type, "pet.created");
    assert.deepEqual(event.data, pet);
    const headers = delivery.headers as Record<string, string>;
    assert.deepEqual(new Webhook(secret).verify(delivery.body, headers), event, "Standard Webhooks' library reads the same event");

    const tampered = Buffer.from(delivery.body.toString().replace("Hooked", "Hacked"));
    await assert.rejects(verifyWebhook(secret, delivery.headers, tampered), WebhookVerificationError);
    assert.throws(() => new Webhook(secret).verify(tampered, headers));
    const otherSecret = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
    await assert.rejects(verifyWebhook(otherSecret, delivery.headers, delivery.body), WebhookVerificationError);
  } finally {
    await new Promise((resolve) => receiver.close(resolve));
  }
});
