/**
 * Builds the web page: ui/src → ui/dist (index.html, app.js, app.css), one
 * minified ES module bundle with Preact inside and nothing fetched from
 * elsewhere. `npm run build:ui` writes it; the test suite rebuilds it in
 * memory and fails if the committed ui/dist differs (test/ui/bundle.test.ts),
 * so the node, which serves ui/dist as committed, always serves the sources.
 *
 * The output must be byte-for-byte reproducible: no timestamps, no absolute
 * paths, no source maps with machine paths.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, type BuildOptions } from 'esbuild'

export const UI_DIR = path.dirname(fileURLToPath(import.meta.url))
export const DIST_DIR = path.join(UI_DIR, 'dist')

/** How the page is bundled. */
const OPTIONS = {
  absWorkingDir: UI_DIR,
  entryPoints: { app: 'src/main.tsx' },
  bundle: true,
  format: 'esm',
  // Evergreen browsers on phones and desktops; nothing older needs serving.
  target: ['es2022', 'chrome109', 'firefox115', 'safari16'],
  minify: true,
  legalComments: 'none',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  charset: 'utf8',
  outdir: 'dist',
  write: false,
  logLevel: 'silent'
} satisfies BuildOptions

/** The files of ui/dist, by name. */
export async function buildUi (): Promise<Map<string, Buffer>> {
  const r = await build(OPTIONS)
  const out = new Map<string, Buffer>()
  for (const f of r.outputFiles) out.set(path.basename(f.path), Buffer.from(f.contents))
  out.set('index.html', fs.readFileSync(path.join(UI_DIR, 'index.html')))
  return out
}

/** The source files the bundle is made of (paths relative to ui/): what the page ships. */
export async function bundleInputs (): Promise<string[]> {
  const r = await build({ ...OPTIONS, metafile: true })
  return Object.keys(r.metafile.inputs)
}

async function main (): Promise<void> {
  const files = await buildUi()
  fs.mkdirSync(DIST_DIR, { recursive: true })
  for (const old of fs.readdirSync(DIST_DIR)) if (!files.has(old)) fs.rmSync(path.join(DIST_DIR, old))
  for (const [name, body] of files) fs.writeFileSync(path.join(DIST_DIR, name), body)
  process.stdout.write([...files].map(([n, b]) => `ui/dist/${n} ${b.length} bytes`).join('\n') + '\n')
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    process.stderr.write(`build:ui failed: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  })
}
