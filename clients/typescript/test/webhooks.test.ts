// verifyWebhook against messages Standard Webhooks' own library signs: the
// cases a real delivery does not show (a roll's two signatures, times out of
// tolerance, malformed headers).

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { Webhook } from "standardwebhooks";

import { dispatchWebhook, verifyWebhook, WebhookVerificationError } from "../src/index.js";

const secret = `whsec_${randomBytes(32).toString("base64")}`;
const rolled = `whsec_${randomBytes(32).toString("base64")}`;
const body = JSON.stringify({ type: "webhook.test", timestamp: "2026-11-28T00:00:00Z", data: { endpoint: "abc" } });

function delivery(at: Date, ...secrets: string[]) {
  return {
    "webhook-id": "msg_2a",
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": secrets.map((s) => new Webhook(s).sign("msg_2a", at, body)).join(" "),
  };
}

test("verifyWebhook accepts what the library signs, with the secret's signature anywhere in the list", async () => {
  const now = new Date();
  assert.deepEqual(await verifyWebhook(secret, delivery(now, secret), body), JSON.parse(body));
  assert.deepEqual(await verifyWebhook(secret, delivery(now, rolled, secret), new TextEncoder().encode(body)), JSON.parse(body));
  assert.deepEqual(await verifyWebhook(rolled, new Headers(delivery(now, rolled, secret)), body), JSON.parse(body));
  // Header names in any case, as some frameworks give them.
  const upper = Object.fromEntries(Object.entries(delivery(now, secret)).map(([k, v]) => [k.toUpperCase(), v]));
  assert.deepEqual(await verifyWebhook(secret, upper, body), JSON.parse(body));
});

test("an event's type narrows its data", async () => {
  const pet = { id: 482915307716243, name: "Rex", categoryId: 7, status: "available" };
  const created = JSON.stringify({ type: "pet.created", timestamp: "2026-11-28T00:00:00Z", data: pet });
  const now = new Date();
  const headers = {
    "webhook-id": "msg_2b",
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": new Webhook(secret).sign("msg_2b", now, created),
  };
  const event = await verifyWebhook(secret, headers, created);
  // These lines compile only while the generated types discriminate on type.
  assert.equal(event.type, "pet.created");
  if (event.type === "pet.created") {
    const name: string = event.data.name;
    const status: "available" | "pending" | "sold" = event.data.status;
    assert.deepEqual({ name, status }, { name: "Rex", status: "available" });
  }
});

test("verifyWebhook refuses what the library refuses", async () => {
  const now = new Date();
  const old = new Date(now.getTime() - 301_000);
  const cases: [string, Record<string, string>, string][] = [
    ["another secret", delivery(now, rolled), body],
    ["another body", delivery(now, secret), body.replace("abc", "abd")],
    ["too old", delivery(old, secret), body],
    // Far enough ahead that the seconds this loop takes on a loaded machine keep it beyond 300 s.
    ["too new", delivery(new Date(now.getTime() + 400_000), secret), body],
    ["no signature", { ...delivery(now, secret), "webhook-signature": "" }, body],
    ["another version", { ...delivery(now, secret), "webhook-signature": delivery(now, secret)["webhook-signature"].replace("v1,", "v2,") }, body],
    ["a timestamp that is not seconds", { ...delivery(now, secret), "webhook-timestamp": "soon" }, body],
  ];
  for (const [name, headers, payload] of cases) {
    assert.throws(() => new Webhook(secret).verify(payload, headers), `the library refuses ${name}`);
    await assert.rejects(verifyWebhook(secret, headers, payload), WebhookVerificationError, name);
  }
  // A wider tolerance, or a given time, accepts the old one.
  assert.ok(await verifyWebhook(secret, delivery(old, secret), body, { toleranceSeconds: 600 }));
  assert.ok(await verifyWebhook(secret, delivery(old, secret), body, { now: old.getTime() }));
});

test("dispatchWebhook calls the handler of the event's type, with the event narrowed, and none for a forgery", async () => {
  const pet = { id: 482915307716243, name: "Rex", categoryId: 7, status: "available" as const };
  const created = JSON.stringify({ type: "pet.created", timestamp: "2026-11-28T00:00:00Z", data: pet });
  const now = new Date();
  const headers = {
    "webhook-id": "msg_2c",
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": new Webhook(secret).sign("msg_2c", now, created),
  };
  const seen: string[] = [];
  const event = await dispatchWebhook(secret, headers, created, {
    "pet.created": (e) => {
      seen.push(`pet ${e.data.name}`); // data is a Pet: the compiler knows name
    },
    "category.deleted": () => {
      seen.push("category");
    },
  });
  assert.equal(event.type, "pet.created");
  assert.deepEqual(seen, ["pet Rex"]);
  await assert.rejects(dispatchWebhook(rolled, headers, created, { "pet.created": () => void seen.push("forged") }), WebhookVerificationError);
  assert.deepEqual(seen, ["pet Rex"]);
});

test("dispatchWebhook narrows usage.threshold to the key, its customer and its day window", async () => {
  const data = {
    key: { id: "abcdefghijklmno", name: "shop", plan: "pro", state: "active" },
    customer: { id: "pqrstuvwxyzabcd", name: "Acme" },
    threshold: 80,
    window: "day",
    day: "2026-12-07",
    limit: 10,
    used: 8,
    resetsAt: "2026-12-08T00:00:00Z",
  };
  const crossed = JSON.stringify({ type: "usage.threshold", timestamp: "2026-12-07T10:00:00Z", data });
  const now = new Date();
  const headers = {
    "webhook-id": "msg_2d",
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": new Webhook(secret).sign("msg_2d", now, crossed),
  };
  const seen: string[] = [];
  await dispatchWebhook(secret, headers, crossed, {
    "usage.threshold": (e) => {
      // These lines compile only while the generated types know the event's data.
      const threshold: 80 | 100 = e.data.threshold;
      const customer: string | undefined = e.data.customer?.name;
      seen.push(`${e.data.key.id} ${threshold} ${e.data.used}/${e.data.limit} ${customer}`);
    },
  });
  assert.deepEqual(seen, ["abcdefghijklmno 80 8/10 Acme"]);
});
