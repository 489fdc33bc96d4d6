// The golem dashboard: fills the server-rendered frame from the JSON routes and refreshes
// every REFRESH_MS. In a `golem report` file the same page carries its data in the
// <script id="golem-data"> element instead: drawn once, no requests, no recall explorer. Signed-in requests carry the HttpOnly session cookie; the one POST
// (recall) adds the X-Golem-Dashboard header the server requires with a cookie. Text from
// the golem (decision summaries, memory texts, on-chain strings) goes in as text nodes.
"use strict";

(function () {
  const REFRESH_MS = 5000;
  const PHASES = ["terminal", "declining", "conservation", "stable", "thriving"];
  const COLORS = ["#1f6feb", "#d97706", "#7c3aed", "#0f766e", "#b42318"];

  function $(id) { return document.getElementById(id); }

  function node(tag, text, cls) {
    const n = document.createElement(tag);
    if (text !== undefined && text !== null) n.textContent = String(text);
    if (cls) n.className = cls;
    return n;
  }

  function clear(n) { while (n.firstChild) n.removeChild(n.firstChild); }

  function timeLabel(t) {
    const d = new Date(t * 1000);
    const pad = v => String(v).padStart(2, "0");
    return pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " +
      pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes());
  }

  function duration(s) {
    if (s === null || s === undefined) return "—";
    if (s < 120) return s.toFixed(0) + "s";
    if (s < 7200) return (s / 60).toFixed(0) + "m";
    if (s < 172800) return (s / 3600).toFixed(1) + "h";
    return (s / 86400).toFixed(1) + "d";
  }

  async function getJSON(path, init) {
    const response = await fetch(path, Object.assign({ credentials: "same-origin" }, init));
    if (response.status === 401) {
      window.location.reload();  // the session ended: back to the sign-in form
      throw new Error("signed out");
    }
    const body = await response.json();
    return { status: response.status, body: body };
  }

  function series(points, key) {
    return points.filter(p => p[key] !== null).map(p => [p.t, p[key]]);
  }

  function drawCharts(points) {
    const charts = window.GolemCharts;
    charts.line($("chart-vitality"), {
      yMin: 0, yMax: 1, xFormat: timeLabel,
      series: ["composite", "economic", "epistemic", "stochastic"].map((k, i) => (
        { name: k, color: COLORS[i], points: series(points, k) })),
    });
    charts.line($("chart-money"), {
      xFormat: timeLabel,
      series: [{ name: "P&L", color: COLORS[3], points: series(points, "pnl_usd") },
               { name: "model spend", color: COLORS[4], points: series(points, "spent_usd") }],
    });
    charts.line($("chart-memory"), {
      xFormat: timeLabel, yMin: 0,
      series: [{ name: "episodes", color: COLORS[0], points: series(points, "episodes") },
               { name: "entries", color: COLORS[2], points: series(points, "entries") }],
    });
    charts.line($("chart-phase"), {
      xFormat: timeLabel, yMin: 0, yMax: PHASES.length - 1, yLabels: PHASES, step: true,
      empty: "no vitality reading yet",
      series: [{ name: "phase", color: COLORS[1], points: points.filter(p => p.phase)
        .map(p => [p.t, PHASES.indexOf(p.phase)]) }],
    });
  }

  function drawSummary(data) {
    const last = data.points.length ? data.points[data.points.length - 1] : null;
    $("golem-time").textContent = "golem time " + data.golem_time;
    $("phase").textContent = last && last.phase ? last.phase : "no reading yet";
    $("vitality").textContent = last && last.composite !== null
      ? last.composite.toFixed(3) + " (E " + last.economic.toFixed(2) + " × K " +
        last.epistemic.toFixed(2) + " × S " + last.stochastic.toFixed(2) + ")"
      : "—";
    const p = data.projection;
    $("projection").textContent = !p ? "—" : p.text;
  }

  function drawLoops(loops) {
    const body = $("loops").querySelector("tbody");
    clear(body);
    for (const lp of loops) {
      const row = document.createElement("tr");
      for (const v of [lp.loop, lp.state, lp.ticks, lp.last_tick_at || "—",
        lp.last_tick_age_s === null ? "—" : lp.last_tick_age_s.toFixed(0),
        lp.last_outcome || "—",
        lp.last_duration_ms === null ? "—" : lp.last_duration_ms.toFixed(1)]) {
        row.appendChild(node("td", v));
      }
      row.appendChild(node("td", lp.stalled ? "stalled" : "ok", lp.stalled ? "bad" : "good"));
      body.appendChild(row);
    }
    const stalled = loops.filter(lp => lp.stalled).map(lp => lp.loop);
    const health = $("health");
    health.textContent = stalled.length ? "stalled: " + stalled.join(", ") : "all loops ok";
    health.className = stalled.length ? "bad" : "good";
  }

  function reasonsText(reasons) {
    if (!reasons) return "";
    return Object.entries(reasons).map(([category, r]) => {
      const why = r && typeof r === "object" ? (r.why || r.reason || JSON.stringify(r)) : r;
      return category + ": " + why;
    }).join("; ");
  }

  function drawDecisions(decisions) {
    const list = $("decisions");
    clear(list);
    if (!decisions.length) list.appendChild(node("li", "no decision yet"));
    for (const d of decisions) {
      const item = node("li");
      item.appendChild(node("strong", "tick " + d.tick + " · " + d.golem_time + " · " +
        d.provider + " (" + d.status + ")"));
      item.appendChild(node("div", d.summary));
      const frame = d.frame && d.frame.why ? "frame: " + d.frame.why : "";
      const outcome = d.outcome && d.outcome.quality !== null && d.outcome.quality !== undefined
        ? "outcome quality " + Number(d.outcome.quality).toFixed(2) : "outcome not scored yet";
      item.appendChild(node("div", [d.regime ? "regime " + d.regime : "", d.phase ?
        "phase " + d.phase : "", frame, outcome].filter(Boolean).join(" · "), "why"));
      const why = reasonsText(d.reasons);
      if (why) item.appendChild(node("div", "workspace: " + why, "why"));
      list.appendChild(item);
    }
  }

  async function refresh() {
    try {
      const [seriesData, health, decisions] = await Promise.all([
        getJSON("/v1/series?limit=2000"), getJSON("/healthz"),
        getJSON("/v1/decisions?limit=10")]);
      drawSummary(seriesData.body);
      drawCharts(seriesData.body.points);
      drawLoops(health.body.loops || seriesData.body.loops);
      drawDecisions(decisions.body.decisions || []);
      $("refreshed").textContent = "updated " + new Date().toLocaleTimeString();
    } catch (err) {
      $("refreshed").textContent = "refresh failed: " + err.message;
    }
  }

  function drawRecall(result) {
    const out = $("recall-result");
    clear(out);
    if (result.status !== 200) {
      out.appendChild(node("p", result.body.error ? result.body.error.message : "error", "bad"));
      return;
    }
    const body = result.body;
    if (body.refused) {
      out.appendChild(node("p", "refused: " + body.reason, "muted"));
    }
    for (const hit of body.hits || []) {
      const s = hit.score;
      const box = node("div", undefined, "hit");
      box.appendChild(node("strong", s.final.toFixed(3) + "  " + hit.uri));
      box.appendChild(node("div", hit.text));
      box.appendChild(node("div", "relevance " + s.relevance.toFixed(2) + " (cosine " +
        s.semantic.toFixed(2) + ", words " + s.lexical.toFixed(2) + ") · temporal " +
        s.temporal.toFixed(2) + " · importance " + s.importance.toFixed(2) + " · emotional " +
        s.emotional.toFixed(2) + " × provenance " + s.provenance_weight.toFixed(2) + " (" +
        hit.provenance.source + ")", "factors"));
      out.appendChild(box);
    }
    for (const hit of body.anti_knowledge || []) {
      out.appendChild(node("div", "anti-knowledge " + hit.uri + ": " + hit.text, "hit bad"));
    }
  }

  function setupRecall() {
    $("recall-form").addEventListener("submit", async event => {
      event.preventDefault();
      const k = parseInt($("recall-k").value, 10) || 5;
      try {
        drawRecall(await getJSON("/v1/memory/search", {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-Golem-Dashboard": "1" },
          body: JSON.stringify({ query: $("recall-query").value, k: k }),
        }));
      } catch (err) {
        $("recall-result").textContent = "search failed: " + err.message;
      }
    });
  }

  function drawEmbedded(data) {
    drawSummary(data.series);
    drawCharts(data.series.points);
    drawLoops(data.loops);
    drawDecisions(data.decisions);
    $("refreshed").textContent = "report written from the data dir";
    $("recall-form").closest("section").remove();
    document.querySelector(".signout").remove();
  }

  function start() {
    const embedded = document.getElementById("golem-data");
    if (embedded) {
      drawEmbedded(JSON.parse(embedded.textContent));
      return;
    }
    setupRecall();
    refresh();
    setInterval(refresh, REFRESH_MS);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
