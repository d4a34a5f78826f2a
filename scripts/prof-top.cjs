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
