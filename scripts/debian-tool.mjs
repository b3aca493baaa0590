// Makes sure a program the tests drive is installed from Debian's packages: returns when one of
// its paths (or the path its environment variable names) exists; installs the package with
// apt-get when run as root (CI, a fresh machine); and otherwise exits 1 saying what to do.
// Nothing is downloaded from anywhere but Debian's package mirror.
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"

/** @param {{ pkg: string, envVar: string, paths: ReadonlyArray<string>, needs: string }} tool */
export const ensureDebianTool = ({ envVar, needs, paths, pkg }) => {
  if ([process.env[envVar], ...paths].some((p) => p && existsSync(p))) return
  if (typeof process.getuid === "function" && process.getuid() === 0) {
    console.error(`${pkg} is missing: installing Debian's package (apt-get install -y ${pkg})`)
    execFileSync("apt-get", ["update"], { stdio: "inherit" })
    execFileSync("apt-get", ["install", "-y", "--no-install-recommends", pkg], {
      stdio: "inherit",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" }
    })
    return
  }
  console.error(`${needs}: run \`sudo apt-get install -y ${pkg}\` (Debian), or set ${envVar} to the binary.`)
  process.exit(1)
}
