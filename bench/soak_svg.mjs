// An SVG plot of soak samples (RSS MiB, open fds, event-loop lag ms over time),
// three stacked panels, no dependencies. As a script: node bench/soak_svg.mjs
// soak.csv > soak.svg.
import { readFileSync } from 'node:fs';

export function svgPlot(samples, { title = 'soak' } = {}) {
  const W = 800, H = 170, PAD = 50;
  const panels = [
    ['RSS (MiB)', (s) => s.rss_kib / 1024, '#1f77b4'],
    ['open fds', (s) => s.fds, '#2ca02c'],
    ['event-loop lag (ms)', (s) => s.lag_ms || 0, '#d62728'],
  ];
  const tMax = Math.max(1, ...samples.map((s) => s.t_s));
  let out = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${panels.length * H + 30}" font-family="sans-serif" font-size="11">\n`;
  out += `<text x="${PAD}" y="18" font-size="14">${title.replace(/[<&]/g, '')}</text>\n`;
  panels.forEach(([name, f, color], i) => {
    const y0 = 30 + i * H;
    const vals = samples.map(f);
    const vMax = Math.max(1e-9, ...vals) * 1.1;
    const x = (t) => PAD + ((W - PAD - 10) * t) / tMax;
    const y = (v) => y0 + H - 25 - ((H - 40) * v) / vMax;
    out += `<rect x="${PAD}" y="${y0 + 15}" width="${W - PAD - 10}" height="${H - 40}" fill="none" stroke="#ccc"/>\n`;
    out += `<text x="${PAD + 4}" y="${y0 + 28}">${name}</text>\n`;
    out += `<text x="4" y="${y(vMax / 1.1) + 4}">${(vMax / 1.1).toFixed(1)}</text><text x="4" y="${y(0) + 4}">0</text>\n`;
    out += `<text x="${W - 60}" y="${y0 + H - 8}">${tMax} s</text>\n`;
    const pts = samples.map((s, k) => `${x(s.t_s).toFixed(1)},${y(vals[k]).toFixed(1)}`).join(' ');
    out += `<polyline fill="none" stroke="${color}" stroke-width="1.2" points="${pts}"/>\n`;
  });
  return out + '</svg>\n';
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [head, ...rows] = readFileSync(process.argv[2], 'utf8').trim().split('\n');
  const cols = head.split(',');
  const samples = rows.map((r) => Object.fromEntries(r.split(',').map((v, i) => [cols[i], Number(v)])));
  process.stdout.write(svgPlot(samples, { title: process.argv[3] || 'soak' }));
}
