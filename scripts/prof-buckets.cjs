// Buckets a boundary .cpuprofile by phase: node scripts/prof-buckets.cjs <file> (SHOW="<bucket>" lists its stacks). First matching rule over the stack wins.
const fs = require("fs");
const p = JSON.parse(fs.readFileSync(process.argv[2]));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children || []) parent.set(c, n.id);
const rules = [
  ["(garbage collector)", (f) => f.functionName === "(garbage collector)"],
  ["(program)/(idle)", (f) => f.functionName === "(program)" || f.functionName === "(idle)"],
  ["signature verify", (f) => /verifyOneShot|verifyEd25519/.test(f.functionName)],
  ["journal seal (sequencer, chain, hash)", (f) => /sealPending|sealScopeNow|sealScopesNow|^chain$|sealHinted|^seal$/.test(f.functionName) && /journal|sequencer/.test(f.url)],
  ["request admission (snapshot, digest, schema)", (f) => f.functionName === "admitRequest"],
  ["decision parse", (f) => f.functionName === "parseDecision"],
  ["guard dry replay", (f) => f.functionName === "dry" || (f.url.includes("store-guard") && /^(begin|settle|record|advance)$/.test(f.functionName))],
  ["begin transition", (f) => /beginWrites|readBeginState|inspectBegin|namedAttempts|expectationHolds/.test(f.functionName) || (f.url.includes("transitions") && f.functionName === "begin")],
  ["settle transition", (f) => /settleWrites/.test(f.functionName)],
  ["memory transact/mutex", (f) => f.url.includes("memory") && /transact|acquire|release|commit|MemoryTx/.test(f.functionName)],
  ["connector call", (f) => /callConnector|settleReply|interpretReply/.test(f.functionName)],
  ["journal drafts/redact", (f) => /draft|unsealedEntries|attemptDraft|redactFor|redact/.test(f.functionName)],
  ["key hash / ids", (f) => /stableId|keyHash|newId|bytes/.test(f.functionName)],
  ["decision checks 2-7", (f) => /^check(Key|Allow|Digest|Refs|Freshness)$/.test(f.functionName)],
  ["boundary execute/precheck (own)", (f) => /execute|precheck|decide|attemptBase|stepRow|beginInputFor|standing/.test(f.functionName) && f.url.includes("core/boundary")],
  ["bench loop", (f) => f.url.includes("bench/boundary")],
];
const tot = new Map(); let total = 0;
p.samples.forEach((s, i) => {
  const dt = p.timeDeltas[i]; total += dt;
  let cat = "other";
  const stack = [];
  for (let cur = s; cur !== undefined; cur = parent.get(cur)) stack.push(byId.get(cur).callFrame);
  outer: for (const [name, r] of rules) for (const f of stack) if (r(f)) { cat = name; break outer; }
  if (cat === (process.env.SHOW || "other") && process.env.SHOW !== undefined) { const k = stack.slice(0, 4).map((f) => f.functionName + "@" + f.url.split("/").slice(-1)[0]).join(" < "); tot.set("  o: " + k, (tot.get("  o: " + k) || 0) + dt); }
  tot.set(cat, (tot.get(cat) || 0) + dt);
});
const per = Number(process.argv[3] || 0);
[...tot].sort((a, b) => b[1] - a[1]).slice(0, 60).forEach(([k, t]) => console.log(((t / total) * 100).toFixed(1).padStart(5) + "%", per ? ((t / total) * per).toFixed(1).padStart(7) + " us" : "", k));
