// Prints the top self-time functions of a V8 .cpuprofile: node scripts/prof-top.cjs <file> [n]
const fs = require("fs");
const p = JSON.parse(fs.readFileSync(process.argv[2]));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const total = p.timeDeltas.reduce((a, b) => a + b, 0);
const self = new Map();
p.samples.forEach((s, i) => {
  const n = byId.get(s);
  const k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber}`;
  self.set(k, (self.get(k) || 0) + p.timeDeltas[i]);
});
[...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.argv[3] || 30)).forEach(([k, t]) => console.log(((t / total) * 100).toFixed(1) + "%", k));
// Inclusive time per function (self + descendants), when a third argument "incl" is given.
if (process.argv[4] === "incl") {
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children || []) parent.set(c, n.id);
  const selfById = new Map();
  p.samples.forEach((s, i) => selfById.set(s, (selfById.get(s) || 0) + p.timeDeltas[i]));
  const incl = new Map();
  for (const [id, t] of selfById) {
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur);
      const k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber}`;
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) || 0) + t);
    }
  }
  console.log("--- inclusive");
  [...incl].sort((a, b) => b[1] - a[1]).slice(0, Number(process.argv[5] || 60)).forEach(([k, t]) => console.log(((t / total) * 100).toFixed(1) + "%", k));
}
