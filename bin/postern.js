#!/usr/bin/env node
// The `postern` command. The TypeScript sources are compiled to dist/ by `npm ci` (the prepare script).
import { main } from '../dist/cli.js';

process.exitCode = await main(process.argv.slice(2), process.env);
