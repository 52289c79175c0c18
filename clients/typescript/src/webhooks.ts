// Webhook verification as Standard Webhooks (https://www.standardwebhooks.com)
// define it, with Web Crypto alone, so that it runs wherever the client does.

import type { webhooks } from "./schema.js";

/**
 * An event petstore delivers, `{"type", "timestamp", "data"}`: the union of
 * the document's webhooks' bodies, so that checking `type` narrows `data`
 * (`pet.created`'s is a Pet).
 */
export type WebhookEvent = {
  [T in keyof webhooks]: webhooks[T]["post"]["requestBody"]["content"]["application/json"];
}[keyof webhooks];

/**
 * A delivery's headers: a fetch Headers (a Request's), or a plain object
 * such as Node's IncomingMessage.headers (names in any case).
 */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** How far `webhook-timestamp` may be from now, in seconds (default 300, as Standard Webhooks' libraries). */
  toleranceSeconds?: number;
  /** The time to check against, in milliseconds since the epoch (default: now). */
  now?: number;
}

/** A delivery that is not petstore's, or not this endpoint's, or too old or too new. */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
}

const encoder = new TextEncoder();

/**
 * Checks a delivery's signature (`webhook-signature`, over
 * `webhook-id.webhook-timestamp.body`, keyed with the endpoint's `whsec_`
 * secret) and time, and returns its event. Pass the body exactly as it came,
 * before any JSON parsing. During a secret roll's grace a delivery carries
 * two signatures, one per secret; either secret verifies it. Throws a
 * WebhookVerificationError when the delivery does not verify.
 */
export async function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  options: VerifyOptions = {},
): Promise<WebhookEvent> {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError("the delivery lacks webhook-id, webhook-timestamp or webhook-signature");
  }
  if (!/^[0-9]+$/.test(timestamp)) {
    throw new WebhookVerificationError("webhook-timestamp is not a Unix time in seconds");
  }
  const tolerance = options.toleranceSeconds ?? 300;
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  if (Math.abs(now - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError(`webhook-timestamp is more than ${tolerance} s from now`);
  }

  const key = await crypto.subtle.importKey("raw", secretBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  const bytes = typeof body === "string" ? encoder.encode(body) : body;
  const prefix = encoder.encode(`${id}.${timestamp}.`);
  const signed = new Uint8Array(prefix.length + bytes.length);
  signed.set(prefix);
  signed.set(bytes, prefix.length);
  for (const signature of signatures.split(" ")) {
    const [version, value] = signature.split(",", 2);
    if (version !== "v1" || !value) continue;
    let mac: Uint8Array<ArrayBuffer>;
    try {
      mac = fromBase64(value);
    } catch {
      continue;
    }
    // subtle.verify compares in constant time.
    if (await crypto.subtle.verify("HMAC", key, mac, signed)) {
      const text = typeof body === "string" ? body : new TextDecoder().decode(body);
      try {
        return JSON.parse(text) as WebhookEvent;
      } catch {
        throw new WebhookVerificationError("the signed body is not JSON");
      }
    }
  }
  throw new WebhookVerificationError("no signature of the delivery matches the secret");
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(" ") : value;
  }
  return undefined;
}

/** The HMAC key of a `whsec_` secret: its base64 part, decoded. */
function secretBytes(secret: string): Uint8Array<ArrayBuffer> {
  try {
    return fromBase64(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret);
  } catch {
    throw new WebhookVerificationError("the secret is not whsec_ and base64");
  }
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/**
 * A handler per event type, each given the event narrowed to its type
 * (`"pet.created"`'s `data` is a Pet). Types without a handler are
 * verified and returned, and handled by no one.
 */
export type WebhookHandlers = {
  [T in WebhookEvent["type"]]?: (event: Extract<WebhookEvent, { type: T }>) => void | Promise<void>;
};

/**
 * Verifies a delivery (as verifyWebhook) and calls the handler of its
 * type, awaited; returns the event. A delivery that does not verify throws
 * a WebhookVerificationError and calls no handler; a handler's error is
 * thrown as it is (answer the delivery 5xx, and it is retried).
 */
export async function dispatchWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  handlers: WebhookHandlers,
  options: VerifyOptions = {},
): Promise<WebhookEvent> {
  const event = await verifyWebhook(secret, headers, body, options);
  const handler = handlers[event.type] as ((event: WebhookEvent) => void | Promise<void>) | undefined;
  await handler?.(event);
  return event;
}
