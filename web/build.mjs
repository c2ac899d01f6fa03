// Bundles the page into dist/web/ at build time (esbuild): one script, its stylesheet and the
// HTML that loads them. The daemon serves these files; nothing is fetched from elsewhere.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'dist', 'web');
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(here, 'app.tsx')],
  outfile: join(out, 'app.js'),
  bundle: true,
  format: 'esm',
  target: 'es2020',
  minify: true,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  logLevel: 'warning',
});
for (const file of ['index.html', 'login.html', 'app.css']) copyFileSync(join(here, file), join(out, file));
