// npm's "prepare": builds dist/ when the package is packed, installed with
// npm ci in its directory, or installed into another project from a
// checkout's path (npm runs it for the linked directory). A fresh checkout
// has no build tools yet: then it installs them first (npm ci, without
// running this again).
import { execFileSync, execSync } from "node:child_process";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const here = new URL("..", import.meta.url);

function tsc() {
  try {
    return require.resolve("typescript/bin/tsc");
  } catch {
    return undefined;
  }
}

if (tsc() === undefined) {
  execSync("npm ci --ignore-scripts --no-audit --no-fund --loglevel=error", { cwd: here, stdio: "inherit" });
}
execFileSync(process.execPath, [tsc() ?? "typescript/bin/tsc", "-p", "tsconfig.json"], { cwd: here, stdio: "inherit" });
