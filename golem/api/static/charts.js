// golem charts: small SVG line charts for the dashboard, written for this project.
//
//   GolemCharts.line(element, {
//     series: [{name: "composite", color: "#1f6feb", points: [[t, y], ...]}],
//     yMin: 0, yMax: 1,            // optional fixed range (else from the data)
//     xFormat: t => "...",         // tick labels on the x axis
//     yFormat: y => "...",         // tick labels on the y axis
//     yLabels: ["terminal", ...],  // optional: categorical y axis (value i -> label i)
//     step: false,                 // draw steps instead of straight segments
//   });
//
// Every call replaces the element's content. Each data point is a <circle class="gc-point">
// with a <title> giving its value; labels are text nodes (never markup).
"use strict";

(function (global) {
  const NS = "http://www.w3.org/2000/svg";
  const PAD = { left: 56, right: 12, top: 22, bottom: 26 };

  function el(name, attrs, parent) {
    const node = document.createElementNS(NS, name);
    for (const [key, value] of Object.entries(attrs || {})) {
      node.setAttribute(key, String(value));
    }
    if (parent) parent.appendChild(node);
    return node;
  }

  function text(parent, x, y, value, cls, anchor) {
    const node = el("text", { x: x, y: y, class: cls, "text-anchor": anchor || "start" },
      parent);
    node.textContent = value;
    return node;
  }

  // Round tick steps: 1, 2 or 5 times a power of ten, about `count` ticks over [lo, hi].
  function niceTicks(lo, hi, count) {
    if (!(hi > lo)) return [lo];
    const raw = (hi - lo) / Math.max(1, count);
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(m => m * power).find(s => s >= raw) || raw;
    const ticks = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
      ticks.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    }
    return ticks;
  }

  function extent(values, fixedLo, fixedHi) {
    let lo = fixedLo, hi = fixedHi;
    for (const v of values) {
      if (fixedLo === undefined) lo = lo === undefined ? v : Math.min(lo, v);
      if (fixedHi === undefined) hi = hi === undefined ? v : Math.max(hi, v);
    }
    if (lo === undefined || hi === undefined) return [0, 1];
    if (lo === hi) {
      const pad = Math.abs(lo) > 0 ? Math.abs(lo) * 0.1 : 1;
      return [fixedLo === undefined ? lo - pad : lo, fixedHi === undefined ? hi + pad : hi];
    }
    return [lo, hi];
  }

  function defaultFormat(v) {
    const a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (a >= 1e4) return (v / 1e3).toFixed(0) + "k";
    if (a >= 100) return v.toFixed(0);
    if (a >= 1) return v.toFixed(2);
    return v.toPrecision(2);
  }

  function pathFor(points, sx, sy, step) {
    let d = "";
    points.forEach(([x, y], i) => {
      const px = sx(x).toFixed(1), py = sy(y).toFixed(1);
      if (i === 0) {
        d += "M" + px + " " + py;
      } else if (step) {
        d += "H" + px + "V" + py;
      } else {
        d += "L" + px + " " + py;
      }
    });
    return d;
  }

  function line(container, options) {
    const series = (options.series || []).map(s => ({
      name: s.name, color: s.color || "#1f6feb",
      points: (s.points || []).filter(p => p[1] !== null && p[1] !== undefined &&
        Number.isFinite(p[0]) && Number.isFinite(p[1])),
    }));
    const width = Math.max(240, container.clientWidth || 480);
    const height = Math.max(140, container.clientHeight || 220);
    while (container.firstChild) container.removeChild(container.firstChild);
    const svg = el("svg", { viewBox: "0 0 " + width + " " + height, role: "img",
      class: "gc-chart" }, container);
    const all = series.flatMap(s => s.points);
    if (all.length === 0) {
      text(svg, width / 2, height / 2, options.empty || "no data yet", "gc-empty", "middle");
      return svg;
    }
    const [x0, x1] = extent(all.map(p => p[0]));
    const [y0, y1] = extent(all.map(p => p[1]), options.yMin, options.yMax);
    const plotW = width - PAD.left - PAD.right, plotH = height - PAD.top - PAD.bottom;
    const sx = x => PAD.left + (x1 === x0 ? plotW / 2 : (x - x0) / (x1 - x0) * plotW);
    const sy = y => PAD.top + plotH - (y - y0) / (y1 - y0) * plotH;
    const yFormat = options.yFormat || defaultFormat;
    const xFormat = options.xFormat || defaultFormat;

    const axis = el("g", { class: "gc-axes" }, svg);
    const yTicks = options.yLabels ? options.yLabels.map((_, i) => i) : niceTicks(y0, y1, 4);
    for (const v of yTicks) {
      if (v < y0 - 1e-12 || v > y1 + 1e-12) continue;
      el("line", { x1: PAD.left, x2: width - PAD.right, y1: sy(v), y2: sy(v),
        class: "gc-axis" }, axis);
      const label = options.yLabels ? options.yLabels[v] : yFormat(v);
      text(axis, PAD.left - 4, sy(v) + 3, label, "gc-tick", "end");
    }
    const xTicks = x1 > x0 ? niceTicks(x0, x1, Math.max(2, Math.floor(plotW / 110))) : [x0];
    for (const v of xTicks) {
      text(axis, sx(v), height - 8, xFormat(v), "gc-tick", "middle");
    }
    el("line", { x1: PAD.left, x2: PAD.left, y1: PAD.top, y2: PAD.top + plotH,
      class: "gc-axis" }, axis);

    series.forEach((s, i) => {
      const group = el("g", { class: "gc-series", "data-name": s.name }, svg);
      if (s.points.length > 1) {
        el("path", { d: pathFor(s.points, sx, sy, options.step), fill: "none",
          stroke: s.color, "stroke-width": 1.8, class: "gc-line" }, group);
      }
      for (const [x, y] of s.points) {
        const dot = el("circle", { cx: sx(x), cy: sy(y), r: 2.6, fill: s.color,
          class: "gc-point" }, group);
        const tip = el("title", {}, dot);
        tip.textContent = s.name + ": " + (options.yLabels ? options.yLabels[y] : yFormat(y)) +
          " at " + xFormat(x);
      }
      const lx = PAD.left + 6 + i * 110;
      el("rect", { x: lx, y: 6, width: 10, height: 10, fill: s.color }, svg);
      text(svg, lx + 14, 15, s.name, "gc-legend");
    });
    return svg;
  }

  global.GolemCharts = { line: line, niceTicks: niceTicks };
})(window);
