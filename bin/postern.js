#!/usr/bin/env -S node --max-semi-space-size=8
// The `postern` command. The TypeScript sources are compiled to dist/ by `npm ci` (the prepare script).
// The flags on the first line size what only Node's command line can (src/lib/heap-sizes.ts).
import { main } from '../dist/cli.js';

process.exitCode = await main(process.argv.slice(2), process.env);
