// qmd's keyword search, timed in one warm Node process (run by bench/peers.py).
//
// Usage: node peers_qmd.mjs QMD_PACKAGE_DIR DB_PATH QUERIES_JSON ROUNDS
// Prints one JSON object: the cold open + first query in ms, and per round
// the wall milliseconds of store.searchLex(query, {limit: 10}) for every query
// and the process CPU milliseconds it took (user + system, all threads).
import { pathToFileURL } from "node:url";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [pkgDir, dbPath, queriesPath, roundsArg] = process.argv.slice(2);
const queries = JSON.parse(readFileSync(queriesPath, "utf8"));
const rounds = Number(roundsArg || "1");
const { createStore } = await import(pathToFileURL(join(pkgDir, "dist", "index.js")).href);

const coldStart = performance.now();
const store = await createStore({ dbPath });
await store.searchLex(queries[0], { limit: 10 });
const cold = performance.now() - coldStart;

const times = [];
const cpu = [];
for (let round = 0; round < rounds; round++) {
  const these = [];
  const cpuThese = [];
  for (const query of queries) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await store.searchLex(query, { limit: 10 });
    these.push(performance.now() - t0);
    const used = process.cpuUsage(c0);
    cpuThese.push((used.user + used.system) / 1000);
  }
  times.push(these);
  cpu.push(cpuThese);
}
if (typeof store.close === "function") await store.close();
process.stdout.write(JSON.stringify({ cold_ms: cold, times_ms: times, cpu_ms: cpu }) + "\n");
