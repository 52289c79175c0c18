// The real petstore binary for the tests: built from this checkout with
// `go build`, served on a free loopback port with a data directory of its
// own, as testkit/realserver does for the Go tests.

import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The root of the Go module: the nearest directory above this file with a go.mod. */
function moduleRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "go.mod"))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error("no go.mod above the tests");
    dir = parent;
  }
  return dir;
}

export class Petstore {
  readonly url: string;
  readonly #dir: string;
  readonly #bin: string;
  readonly #process: ChildProcess;
  #output = "";

  private constructor(bin: string, dir: string, url: string, child: ChildProcess) {
    this.#bin = bin;
    this.#dir = dir;
    this.url = url;
    this.#process = child;
    child.stdout?.on("data", (chunk: Buffer) => (this.#output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (this.#output += chunk.toString()));
  }

  /**
   * Builds the binary into a temporary directory, runs `before` (commands
   * that must precede serve, such as `superuser upsert`) against a new data
   * directory, and starts `serve --http 127.0.0.1:PORT` with `args`.
   */
  static async start(args: string[] = [], before: string[][] = []): Promise<Petstore> {
    const dir = mkdtempSync(join(tmpdir(), "petstore-ts-"));
    const bin = join(dir, "petstore");
    await run("go", ["build", "-o", bin, "."], { cwd: moduleRoot(), env: { ...process.env, GOTOOLCHAIN: "local" } });
    const data = join(dir, "pb_data");
    for (const command of before) {
      await run(bin, [...command, "--dir", data]);
    }
    let lastError: unknown;
    for (let i = 0; i < 3; i++) {
      // The free port may be taken between the probe and the start.
      try {
        return await Petstore.#serve(bin, data, args);
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError;
  }

  static async #serve(bin: string, dir: string, args: string[]): Promise<Petstore> {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const child = spawn(bin, ["serve", "--http", `127.0.0.1:${port}`, "--dir", dir, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    const server = new Petstore(bin, dir, url, child);
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`petstore serve exited at start: ${server.#output}`);
      try {
        const answer = await fetch(`${url}/api/health`);
        await answer.arrayBuffer();
        // Serving, and done printing its banner, which may follow the first answer.
        if (answer.ok && server.#output.includes("└─ PocketBase:")) return server;
      } catch {
        // Not listening yet.
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    child.kill("SIGKILL");
    throw new Error(`petstore serve did not answer within a minute: ${server.#output}`);
  }

  /** What the server printed so far. */
  get output(): string {
    return this.#output;
  }

  /** Runs `petstore ARGS --dir DIR` beside the server and returns what it printed. */
  async run(...args: string[]): Promise<string> {
    const { stdout } = await run(this.#bin, [...args, "--dir", this.#dir]);
    return stdout;
  }

  /** Runs `petstore keys create ARGS` and returns the key it printed. */
  async createKey(...args: string[]): Promise<string> {
    const stdout = await this.run("keys", "create", "--name", "typescript test", ...args);
    const key = stdout.trim();
    if (!/^pet_\S+$/.test(key)) throw new Error(`keys create printed ${JSON.stringify(stdout)}`);
    return key;
  }

  /** Stops the server and removes its binary and data. */
  async stop(): Promise<void> {
    if (this.#process.exitCode === null) {
      const exited = new Promise((resolve) => this.#process.once("exit", resolve));
      this.#process.kill("SIGTERM");
      await exited;
    }
    rmSync(dirname(this.#dir), { recursive: true, force: true });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}
