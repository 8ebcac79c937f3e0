/**
 * The process entry of the `meta-core` command (cli.ts): `bin/meta-core.js`
 * loads it through tsx, `npm start` and the tests run it the same way.
 */
import '../mesh/libp2p/polyfill.js'
import { runCli } from './cli.js'

runCli(process.argv.slice(2), process.env, {
  out: (text) => { process.stdout.write(text) },
  err: (text) => { process.stderr.write(text) }
}).then((code) => {
  // stdout may be a pipe: exit once what was written has been handed over, or a reader sees it cut.
  process.stdout.write('', () => { process.exit(code) })
}, (err: unknown) => {
  process.stderr.write(`meta-core: failed: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
