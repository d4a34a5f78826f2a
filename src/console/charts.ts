/**
 * Small inline SVG charts (no script, no style attributes: colours come from classes in the
 * console's stylesheet). Each chart is an image with a text alternative, and the numbers are
 * also given as a table for screen readers and for reading exact values.
 */
import { h, nothing, type H } from "./html.js";

export interface Series {
  name: string;
  /** CSS class that colours it. */
  cls: string;
  values: number[];
}

const W = 480;
const H_ = 140;
const PAD = { l: 28, r: 6, t: 8, b: 20 };

function maxOf(series: Series[], stacked: boolean): number {
  const n = series[0]?.values.length ?? 0;
  let m = 0;
  for (let i = 0; i < n; i++) {
    if (stacked) m = Math.max(m, series.reduce((a, s) => a + (s.values[i] ?? 0), 0));
    else for (const s of series) m = Math.max(m, s.values[i] ?? 0);
  }
  return Math.max(1, m);
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}

/** Stacked bars, one per bucket. */
export function stackedBars(id: string, title: string, labels: string[], series: Series[]): H {
  const n = labels.length;
  const max = maxOf(series, true);
  const bw = (W - PAD.l - PAD.r) / Math.max(1, n);
  const y = (v: number): number => H_ - PAD.b - (v / max) * (H_ - PAD.t - PAD.b);
  const bars: H[] = [];
  for (let i = 0; i < n; i++) {
    let base = 0;
    for (const s of series) {
      const v = s.values[i] ?? 0;
      if (v === 0) continue;
      const top = y(base + v);
      bars.push(h`<rect class="${s.cls}" x="${round(PAD.l + i * bw + 1)}" y="${round(top)}" width="${round(Math.max(1, bw - 2))}" height="${round(y(base) - top)}"></rect>`);
      base += v;
    }
  }
  return frame(id, title, labels, series, max, h`${bars}`);
}

/** Lines, one per series. */
export function lines(id: string, title: string, labels: string[], series: Series[]): H {
  const n = labels.length;
  const max = maxOf(series, false);
  const x = (i: number): number => PAD.l + (n <= 1 ? 0 : (i / (n - 1)) * (W - PAD.l - PAD.r));
  const y = (v: number): number => H_ - PAD.b - (v / max) * (H_ - PAD.t - PAD.b);
  const paths = series.map((s) => h`<polyline class="line ${s.cls}" fill="none" points="${s.values.map((v, i) => `${round(x(i))},${round(y(v))}`).join(" ")}"></polyline>`);
  return frame(id, title, labels, series, max, h`${paths}`);
}

function frame(id: string, title: string, labels: string[], series: Series[], max: number, marks: H): H {
  const totals = series.map((s) => `${s.name} ${s.values.reduce((a, b) => a + b, 0)}`).join(", ");
  const first = labels[0] ?? "";
  const last = labels[labels.length - 1] ?? "";
  return h`<figure class="chart">
  <figcaption id="${id}-cap">${title}</figcaption>
  <svg viewBox="0 0 ${W} ${H_}" role="img" aria-labelledby="${id}-cap ${id}-sum" focusable="false">
    <line class="axis" x1="${PAD.l}" y1="${H_ - PAD.b}" x2="${W - PAD.r}" y2="${H_ - PAD.b}"></line>
    <line class="axis" x1="${PAD.l}" y1="${PAD.t}" x2="${PAD.l}" y2="${H_ - PAD.b}"></line>
    <text class="tick" x="${PAD.l - 4}" y="${PAD.t + 8}" text-anchor="end">${max}</text>
    <text class="tick" x="${PAD.l - 4}" y="${H_ - PAD.b}" text-anchor="end">0</text>
    <text class="tick" x="${PAD.l}" y="${H_ - 4}">${first}</text>
    <text class="tick" x="${W - PAD.r}" y="${H_ - 4}" text-anchor="end">${last}</text>
    ${marks}
  </svg>
  <p id="${id}-sum" class="legend">${series.map((s) => h`<span class="key"><span class="swatch ${s.cls}" aria-hidden="true"></span>${s.name}: ${s.values.reduce((a, b) => a + b, 0)}</span> `)}<span class="visually-hidden">(totals over the period: ${totals})</span></p>
  <details><summary>Numbers</summary>
    <div class="table-wrap" role="region" aria-label="${title}: numbers" tabindex="0"><table>
      <thead><tr><th scope="col">From (UTC)</th>${series.map((s) => h`<th scope="col">${s.name}</th>`)}</tr></thead>
      <tbody>${labels.map((l, i) => h`<tr><th scope="row">${l}</th>${series.map((s) => h`<td>${s.values[i] ?? 0}</td>`)}</tr>`)}</tbody>
    </table></div>
  </details>
</figure>${nothing}`;
}
