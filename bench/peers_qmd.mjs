// qmd's keyword search, timed in one warm Node process (run by bench/peers.py).
//
// Usage: node peers_qmd.mjs QMD_PACKAGE_DIR DB_PATH QUERIES_JSON ROUNDS
// Prints one JSON object: the cold open + first query in ms, and per round
// the wall milliseconds of store.searchLex(query, {limit: 10}) for every query
// and the process CPU milliseconds it took (user + system, all threads).
//
// Then the same queries as one FTS5 query on the same table with their words
// joined by OR ("any_times_ms", "any_cpu_ms"), the way signaldesk ranks them (qmd
// joins them with AND): what a single keyword pass over whole notes costs. Each
// word is cleaned by qmd's own sanitizeFTS5Term and kept a prefix term, as qmd
// has it; the ten best rows are read with their path and text.
import { pathToFileURL } from "node:url";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [pkgDir, dbPath, queriesPath, roundsArg] = process.argv.slice(2);
const queries = JSON.parse(readFileSync(queriesPath, "utf8"));
const rounds = Number(roundsArg || "1");
const { createStore } = await import(pathToFileURL(join(pkgDir, "dist", "index.js")).href);
const { sanitizeFTS5Term } = await import(pathToFileURL(join(pkgDir, "dist", "store.js")).href);

const coldStart = performance.now();
const store = await createStore({ dbPath });
await store.searchLex(queries[0], { limit: 10 });
const cold = performance.now() - coldStart;

// Wall and CPU ms of search(query) for every query, `rounds` times over.
async function timed(search) {
  const times = [];
  const cpu = [];
  for (let round = 0; round < rounds; round++) {
    const these = [];
    const cpuThese = [];
    for (const query of queries) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await search(query);
      these.push(performance.now() - t0);
      const used = process.cpuUsage(c0);
      cpuThese.push((used.user + used.system) / 1000);
    }
    times.push(these);
    cpu.push(cpuThese);
  }
  return [times, cpu];
}

const [times, cpu] = await timed((query) => store.searchLex(query, { limit: 10 }));

const anyWord = store.internal.db.prepare(
  "SELECT d.path, c.doc, f.score FROM (SELECT rowid, bm25(documents_fts, 1.5, 4.0, 1.0) AS score" +
    " FROM documents_fts WHERE documents_fts MATCH ? ORDER BY score LIMIT 10) f" +
    " JOIN documents d ON d.id = f.rowid JOIN content c ON c.hash = d.hash ORDER BY f.score",
);
const [anyTimes, anyCpu] = await timed(async (query) => {
  const words = query.split(/\s+/).map(sanitizeFTS5Term).filter((w) => w.length > 0);
  if (words.length > 0) anyWord.all(words.map((w) => `"${w}"*`).join(" OR "));
});
if (typeof store.close === "function") await store.close();
process.stdout.write(
  JSON.stringify({
    cold_ms: cold,
    times_ms: times,
    cpu_ms: cpu,
    any_times_ms: anyTimes,
    any_cpu_ms: anyCpu,
  }) + "\n",
);
