// shellcheck on every bash/sh `run:` script of the given workflow files, as the native actionlint
// does it (its WebAssembly build, which scripts/actionlint.sh runs, cannot start processes):
// each `${{ ... }}` becomes underscores of the same length, shellcheck runs with --norc and
// actionlint's exclusions, and findings are reported at their line in the workflow file.
//
//     node shellcheck-runs.mjs FILE...     (exit 1 on any finding; needs shellcheck on PATH)
//
// ACTIONLINT_TOOL names the folder whose node_modules holds the `yaml` package (scripts/actionlint.sh
// installs it into target/tools/actionlint).
import { readFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'

const require = createRequire(`${process.env.ACTIONLINT_TOOL ?? process.cwd()}/`)
const { parseDocument, LineCounter, isMap, isSeq, isScalar } = require('yaml')

// The same as actionlint's rule_shellcheck.go: checks that only misfire on a script cut out of
// a workflow (sourced files, variables set by `env:`, the placeholders of `${{ }}`).
const EXCLUDE = 'SC1091,SC2194,SC2050,SC2154,SC2157'

function get (map, key) {
  return isMap(map) ? map.get(key, true) : undefined
}

function value (node) {
  return isScalar(node) ? node.value : undefined
}

let findings = 0
for (const file of process.argv.slice(2)) {
  const text = readFileSync(file, 'utf8')
  const lines = new LineCounter()
  const doc = parseDocument(text, { lineCounter: lines })
  const wfShell = value(get(get(get(doc.contents, 'defaults'), 'run'), 'shell'))
  const jobs = get(doc.contents, 'jobs')
  if (!isMap(jobs)) continue
  for (const { key: jobKey, value: job } of jobs.items) {
    const jobShell = value(get(get(get(job, 'defaults'), 'run'), 'shell'))
    const runsOn = String(value(get(job, 'runs-on')) ?? '')
    const steps = get(job, 'steps')
    if (!isSeq(steps)) continue
    steps.items.forEach((step, index) => {
      const run = get(step, 'run')
      if (!isScalar(run)) return
      // GitHub's default shell is bash, pwsh on Windows runners; a matrix runner counts as bash.
      const shell = value(get(step, 'shell')) ?? jobShell ?? wfShell ??
        (/windows/i.test(runsOn) ? 'pwsh' : 'bash')
      const name = shell.split(/\s+/)[0]
      if (name !== 'bash' && name !== 'sh') return
      const script = String(run.value).replace(/\$\{\{[\s\S]*?\}\}/g, (m) => '_'.repeat(m.length))
      // A block scalar's text starts on the line after its `|` or `>` indicator.
      const block = run.type === 'BLOCK_LITERAL' || run.type === 'BLOCK_FOLDED'
      const first = lines.linePos(run.range[0]).line + (block ? 1 : 0)
      const result = spawnSync('shellcheck', ['--norc', '-f', 'json', '-s', name, '-e', EXCLUDE, '-'],
        { input: script, encoding: 'utf8' })
      if (result.error) throw result.error
      const issues = result.stdout.trim() ? JSON.parse(result.stdout) : []
      for (const issue of issues) {
        findings++
        const where = `${file}:${first + issue.line - 1}:${issue.column}`
        console.log(`${where} shellcheck SC${issue.code} (${issue.level}) in job "${value(jobKey)}" step ${index + 1}: ${issue.message}`)
      }
      if (result.status !== 0 && issues.length === 0) {
        console.error(result.stderr)
        findings++
      }
    })
  }
}
if (findings > 0) process.exit(1)
