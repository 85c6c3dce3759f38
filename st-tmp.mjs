import { readFileSync } from "node:fs";
const f = (n) => { const t = readFileSync("/proc/self/status","utf8"); return (Number(new RegExp(`^${n}:\\s+(\\d+) kB`,"m").exec(t)[1])/1024).toFixed(1); };
const what = process.argv.slice(2);
for (const m of what) await import(m);
if (globalThis.gc) { gc(); }
setTimeout(() => console.log(what.join(","), "hwm", f("VmHWM"), "rss", f("VmRSS"), "anon", f("RssAnon"), "file", f("RssFile")), 200);
