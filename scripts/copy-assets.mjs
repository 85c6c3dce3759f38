#!/usr/bin/env node
// tsc compiles TypeScript only; the store's Lua scripts are copied beside the compiled code.
import { cpSync } from "node:fs";

cpSync("core/store/lua", "dist/core/store/lua", { recursive: true });
