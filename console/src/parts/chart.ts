/** uPlot drawing of stacked daily spend (loaded lazily by spend-chart.tsx). */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Unit } from '../api';
import type { Stacked } from './spend-chart';

const COLORS = ['#2563eb', '#16a34a', '#ea580c', '#9333ea', '#0891b2', '#ca8a04', '#db2777', '#4b5563', '#94a3b8'];

/** Draws the chart; a click on a bar calls `onPick` with its day and series (the drill-down). */
export function drawStacked(
  host: HTMLElement,
  data: Stacked,
  unit: Unit,
  onPick?: (day: string, series: string) => void,
): () => void {
  const xs = data.days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
  // Cumulative sums, drawn largest first so each band shows on top of the one below.
  const cumulative: number[][] = [];
  data.series.forEach((s, k) => cumulative.push(s.values.map((v, i) => v + (k ? cumulative[k - 1]![i]! : 0))));
  const order = cumulative.map((_, k) => k).reverse();
  const bars = uPlot.paths.bars!({ size: [0.7, 40] });
  const plot = new uPlot(
    {
      width: Math.max(320, host.clientWidth),
      height: 240,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      legend: { show: true },
      axes: [{}, { size: 70, values: (_u, splits) => splits.map((v) => (unit === 'USD' ? `$${v}` : `${v}`)) }],
      series: [
        { label: 'day (UTC)' },
        ...order.map((k) => ({
          label: data.series[k]!.name,
          fill: COLORS[k % COLORS.length],
          stroke: COLORS[k % COLORS.length],
          paths: bars,
          points: { show: false },
          value: (_u: uPlot, _v: number | null, _s: number, i: number | null) =>
            i === null ? '' : String(Number(data.series[k]!.values[i]!.toPrecision(12))),
        })),
      ],
      scales: { x: { time: true } },
    },
    [xs, ...order.map((k) => cumulative[k]!)],
    host,
  );
  // Which band of which day is under the click: the day from its x, the series from the stacked
  // value at its height. Read from the click itself, against the layer's box now: uPlot's cursor is
  // measured against a box it caches until a scroll or resize event, which a layout that moved
  // without one (or a scroll event not yet delivered) leaves stale, and a click then opened nothing.
  const pick = (e: MouseEvent) => {
    const box = plot.over.getBoundingClientRect();
    const left = e.clientX - box.left;
    const top = e.clientY - box.top;
    if (left < 0 || top < 0 || left > box.width || top > box.height) return;
    const i = plot.posToIdx(left);
    if (i < 0 || i >= data.days.length) return;
    const y = plot.posToVal(top, 'y');
    const k = cumulative.findIndex(
      (c, n) => y <= c[i]! && y >= (n ? cumulative[n - 1]![i]! : 0) && data.series[n]!.values[i]! > 0,
    );
    if (k >= 0) onPick?.(data.days[i]!, data.series[k]!.name);
  };
  plot.over.addEventListener('click', pick);
  plot.over.style.cursor = onPick ? 'pointer' : '';
  (host as HTMLElement & { plot?: uPlot }).plot = plot; // for the browser tests: where a bar is drawn
  return () => plot.destroy();
}
