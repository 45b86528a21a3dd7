// Builds the native module (debug unless `--release` is passed), fails if the freshly generated
// native.d.ts / native.js (napi-rs's types and loader, named as in package.json's build scripts)
// differ from the committed ones, then type-checks lib.d.ts and test/typed.ts with tsc. Run from
// bindings/node: `npm run check-types [-- --release]`.
import { execFileSync } from 'node:child_process'
import { readFileSync, existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const generated = ['native.d.ts', 'native.js']
const read = (f) => (existsSync(path.join(dir, f)) ? readFileSync(path.join(dir, f), 'utf8') : null)
const committed = Object.fromEntries(generated.map((f) => [f, read(f)]))

const bin = (name) => path.join(dir, 'node_modules/.bin', name)
const names = ['--dts', generated[0], '--js', generated[1]]
execFileSync(bin('napi'), ['build', '--platform', ...names, ...process.argv.slice(2)], { cwd: dir, stdio: 'inherit' })

let drift = false
for (const f of generated) {
  if (committed[f] !== read(f)) {
    drift = true
    console.error(`check-types: ${f} differs from the committed file; the build regenerated it: commit the new one`)
    try {
      execFileSync('git', ['--no-pager', 'diff', '--no-index', '--', '-', f], { cwd: dir, input: committed[f] ?? '', stdio: ['pipe', 'inherit', 'inherit'] })
    } catch {}
  }
}
execFileSync(bin('tsc'), ['--noEmit', '-p', 'test/tsconfig.json'], { cwd: dir, stdio: 'inherit' })
if (drift) process.exit(1)
console.log(`check-types: ${generated.join(' and ')} match the build; tsc --noEmit ok`)
