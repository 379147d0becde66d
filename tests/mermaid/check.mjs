// Parse Mermaid diagrams with the real Mermaid parser (no browser needed).
// stdin: a JSON array of diagram texts; stdout: a JSON array of
// {"ok": true, "type": "pie"} or {"ok": false, "error": "..."}, one per diagram.
import DOMPurify from "dompurify";

// Mermaid sanitises labels with DOMPurify, which needs a DOM; parsing does not.
// Stub the few methods it calls so that only the grammar decides.
DOMPurify.addHook ??= () => {};
DOMPurify.removeHook ??= () => {};
DOMPurify.removeAllHooks ??= () => {};
DOMPurify.sanitize ??= (text) => text;

const { default: mermaid } = await import("mermaid");

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = [];
for (const text of JSON.parse(input)) {
  try {
    const parsed = await mermaid.parse(text);
    results.push({ ok: true, type: parsed.diagramType });
  } catch (error) {
    results.push({ ok: false, error: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
