/* msreport page behaviour: draw charts (vega-embed, offline), sortable and filterable tables,
   the step selector of the cluster step trace, and the rank selector of the single-file report. */
(function () {
  "use strict";
  // ast + vega-embed's bundled expression interpreter: Vega evaluates expressions without Function/eval, so the
  // pages' Content-Security-Policy needs no 'unsafe-eval'. defaultStyle false: no injected <style> (CSP forbids it).
  // tooltip: our own handler, styled through the CSSOM (vega-tooltip's default injects a <style> element).
  var tipEl = null;
  function tooltip(handler, event, item, value) {
    if (!tipEl) {
      tipEl = document.createElement("div");
      tipEl.className = "msr-tooltip";
      var st = tipEl.style;
      st.position = "fixed"; st.zIndex = "1000"; st.pointerEvents = "none"; st.maxWidth = "420px";
      st.padding = "6px 8px"; st.background = "rgba(255,255,255,0.96)"; st.border = "1px solid #aaa";
      st.borderRadius = "3px"; st.boxShadow = "1px 1px 4px rgba(0,0,0,0.2)"; st.font = "12px sans-serif";
      st.color = "#222"; st.display = "none";
      document.body.appendChild(tipEl);
    }
    if (value === null || value === undefined || value === "" || !event) { tipEl.style.display = "none"; return; }
    tipEl.textContent = "";
    if (typeof value === "object") {
      Object.keys(value).forEach(function (k) {
        if (value[k] === "" || value[k] === null || value[k] === undefined) { return; }  // a field this row lacks
        var row = document.createElement("div");
        var key = document.createElement("span");
        key.style.color = "#777"; key.textContent = k + ": ";
        row.appendChild(key);
        row.appendChild(document.createTextNode(String(value[k])));
        tipEl.appendChild(row);
      });
    } else {
      tipEl.textContent = String(value);
    }
    tipEl.style.display = "block";
    var x = event.clientX + 12, y = event.clientY + 12;
    var w = tipEl.offsetWidth, h = tipEl.offsetHeight;
    if (x + w > window.innerWidth) { x = Math.max(0, event.clientX - w - 12); }
    if (y + h > window.innerHeight) { y = Math.max(0, event.clientY - h - 12); }
    tipEl.style.left = x + "px"; tipEl.style.top = y + "px";
  }
  var EMBED_OPTS = { ast: true, defaultStyle: false, tooltip: tooltip,
                     actions: { export: true, source: false, compiled: false, editor: false } };

  function embed(fig, spec) {
    var opts = Object.assign({}, EMBED_OPTS, { renderer: fig.getAttribute("data-renderer") || "svg" });
    var b = document.body;  // the export menu in the report's language (vega-embed's i18n option)
    if (b.getAttribute("data-save-svg")) {
      opts.i18n = { SVG_ACTION: b.getAttribute("data-save-svg"), PNG_ACTION: b.getAttribute("data-save-png") };
    }
    var title = (spec.usermeta || {}).msr_step_title, legends = (spec.usermeta || {}).msr_legend_titles;
    if (title || legends) {
      opts.patch = function (vg) {
        if (title) { vg = stepTitlePatch(vg, title.avg); }
        return legends ? legendTitlePatch(vg, legends) : vg;
      };
    }
    var vis = fig.querySelector(".vis");
    if (typeof vegaEmbed !== "function") { fig.setAttribute("data-error", "vega-embed missing"); return; }
    return vegaEmbed(vis, spec, opts).then(function (res) {
      fig._msrView = res.view;  // per-step data, linked selections and the timeline drive the drawn view
      fig._msrSpec = spec;
      fig.setAttribute("data-rendered", "true");
      fig.dispatchEvent(new CustomEvent("msr-drawn", { detail: res.view }));
    }).catch(function (e) {
      fig.setAttribute("data-error", String(e));
      vis.textContent = (document.body.getAttribute("data-chart-error") || "This chart could not be drawn:") + " " + e;
    });
  }

  var Z_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", Z_INDEX = {};
  for (var zi = 0; zi < Z_ALPHABET.length; zi++) { Z_INDEX[Z_ALPHABET.charAt(zi)] = zi; }
  function columnValues(c) {
    // charts/column_codec.py: a plain list, {dec, d} (delta-coded integers / 10^dec), {dec, dr} (the same, deltas
    // as runs), {dec, z} (the same, deltas zigzag-coded 5 bits a character) or {runs: [v, n, ...]}
    var out = [], i, j;
    if (Array.isArray(c)) { return c; }
    if (c.runs) {
      for (i = 0; i < c.runs.length; i += 2) { for (j = 0; j < c.runs[i + 1]; j++) { out.push(c.runs[i]); } }
      return out;
    }
    var acc = 0, scale = Math.pow(10, c.dec || 0);
    if (c.z !== undefined) {  // every step exact in doubles (|delta| < 2^50)
      var n = 0, mult = 1, k;
      for (i = 0; i < c.z.length; i++) {
        k = Z_INDEX[c.z.charAt(i)];
        n += (k & 31) * mult;
        if (k & 32) { mult *= 32; continue; }
        acc += n % 2 ? -(n + 1) / 2 : n / 2;
        out.push(c.dec ? acc / scale : acc);
        n = 0; mult = 1;
      }
      return out;
    }
    if (c.dr) {  // the deltas as runs: delta dr[i] repeated dr[i + 1] times
      for (i = 0; i < c.dr.length; i += 2) {
        for (j = 0; j < c.dr[i + 1]; j++) { acc += c.dr[i]; out.push(c.dec ? acc / scale : acc); }
      }
      return out;
    }
    for (i = 0; i < c.d.length; i++) { acc += c.d[i]; out.push(c.dec ? acc / scale : acc); }
    return out;
  }
  var RANK_SLOT = "987654321";  // urls.RANK_SLOT: a column {rank_href, of} is each row's rank in that href
  function columnRows(cols, fields) {
    var vals = cols.map(function (c) { return c.rank_href !== undefined ? null : columnValues(c); });
    cols.forEach(function (c, j) {
      if (c.rank_href === undefined) { return; }
      var ranks = vals[fields.indexOf(c.of)] || [];
      vals[j] = ranks.map(function (r) { return c.rank_href.replace(RANK_SLOT, r); });
    });
    var n = vals.length ? vals[0].length : 0, rows = [];
    for (var i = 0; i < n; i++) { rows.push(vals.map(function (v) { return v[i]; })); }
    return rows;
  }

  function datasetRows(d) {
    // a step's rows: objects, or columnar {fields, cols} (charts/columnar.py)
    if (!d) { return []; }
    if (!d.cols) { return d; }
    return columnRows(d.cols, d.fields).map(function (vals) {
      var row = {};
      d.fields.forEach(function (f, i) { row[f] = vals[i]; });
      return row;
    });
  }

  // A chart with per-step data names the step on its axis: the compiled Vega axis titled as the average gets
  // its title from the signal `msr_step_title`, which the step selector sets (site/step_views.py, axis_title).
  function stepTitlePatch(vg, avg) {
    function walk(node) {
      (node.axes || []).forEach(function (a) { if (a.title === avg) { a.title = { signal: "msr_step_title" }; } });
      (node.marks || []).forEach(walk);
    }
    walk(vg);
    vg.signals = (vg.signals || []).concat([{ name: "msr_step_title", value: avg }]);
    return vg;
  }

  // A colour legend whose metric a drop-down picks is titled with that metric and its unit (charts/comm.py,
  // metric_legend): the compiled legend titled as the default gets a title expression over the drop-down's signal.
  function legendTitlePatch(vg, meta) {
    var expr = JSON.stringify(meta["default"]);
    Object.keys(meta.titles).forEach(function (k) {
      expr = meta.signal + " === " + JSON.stringify(k) + " ? " + JSON.stringify(meta.titles[k]) + " : (" + expr + ")";
    });
    function walk(node) {
      (node.legends || []).forEach(function (l) { if (l.title === meta["default"]) { l.title = { signal: expr }; } });
      (node.marks || []).forEach(walk);
    }
    walk(vg);
    return vg;
  }

  function expandColumns(fig, spec) {
    // datasets carried columnar (Chart.columns): {name: {fields, rows}} -> rows of objects
    var el = fig.querySelector("script.columns");
    if (!el) { return spec; }
    // a field listed in `dicts` holds an index into its list: the value is looked up, the index kept as <field>_i
    var cols = JSON.parse(el.textContent), ds = Object.assign({}, spec.datasets || {});
    Object.keys(cols).forEach(function (name) {
      var f = cols[name].fields, dicts = cols[name].dicts || {};
      ds[name] = (cols[name].cols ? columnRows(cols[name].cols, f) : cols[name].rows).map(function (vals) {
        var row = {};
        for (var i = 0; i < f.length; i++) {
          var d = dicts[f[i]];
          if (d) { row[f[i]] = d[vals[i]]; row[f[i] + "_i"] = vals[i]; } else { row[f[i]] = vals[i]; }
        }
        return row;
      });
    });
    return Object.assign({}, spec, { datasets: ds });
  }

  function specOf(fig) {
    var own = fig.querySelector("script.spec");  // (a large run's rank page: none where the columns carry the data)
    var spec = own ? JSON.parse(own.textContent) : {};
    var key = fig.getAttribute("data-spec");  // rank pages: the spec is shared (assets/rank-specs.js), data is here
    if (key && window.MSREPORT_SPECS && window.MSREPORT_SPECS[key]) {
      spec = Object.assign({}, window.MSREPORT_SPECS[key], spec);
    }
    spec = expandColumns(fig, spec);
    return fig.hasAttribute("data-table") ? tableRows(fig, spec) : spec;
  }

  function tableRows(fig, spec) {
    // a dataset read from a table of the page (Chart.table: a large run's rank step lines, from the step table
    // beside them): a row per step and colour label, the label's column given by data-table-cols (-1: none)
    var scope = fig.closest("section") || document;
    var table = scope.querySelector("table[id='" + fig.getAttribute("data-table") + "']");
    var cols = fig.getAttribute("data-table-cols").split(",").map(Number);
    var labels = (((spec.encoding || {}).color || {}).scale || {}).domain || [];
    var rows = [];
    if (table && table.tBodies.length) {
      Array.prototype.forEach.call(table.tBodies[0].rows, function (tr) {
        var step = cellValue(tr.cells[0]);
        if (typeof step !== "number") { return; }
        cols.forEach(function (c, i) {
          var v = c >= 0 && tr.cells[c] ? cellValue(tr.cells[c]) : null;
          if (typeof v === "number" && i < labels.length) { rows.push({ step: step, phase: labels[i], value: v }); }
        });
      });
    }
    var ds = Object.assign({}, spec.datasets || {});
    ds[fig.getAttribute("data-table-set")] = rows;
    return Object.assign({}, spec, { datasets: ds });
  }

  function drawCharts() {
    document.querySelectorAll("figure.chart").forEach(function (fig) {
      if (fig.hasAttribute("data-rank-switch")) { return; }
      try { embed(fig, specOf(fig)); } catch (e) { fig.setAttribute("data-error", String(e)); }
    });
  }

  // ---- tables --------------------------------------------------------------------------------
  function cellValue(td) {
    var v = td.getAttribute("data-v");
    if (v !== null && v !== "" && !isNaN(Number(v))) { return Number(v); }
    var t = td.textContent.trim();
    if (v === null && t !== "") {  // numeric cells without a sort key show a plain number: 1,234.567 / 34.2 % / 2.30e-05
      var n = Number(t.replace(/,/g, "").replace(/\s*%$/, ""));
      if (!isNaN(n)) { return n; }
    }
    return t.toLowerCase();
  }
  function sortBy(table, idx, th) {
    var tbody = table.tBodies[0];
    var asc = !th.classList.contains("asc");
    table.querySelectorAll("thead th").forEach(function (h) { h.classList.remove("asc", "desc"); });
    th.classList.add(asc ? "asc" : "desc");
    var rows = Array.prototype.slice.call(tbody.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a.cells[idx]), y = cellValue(b.cells[idx]);
      var xn = typeof x === "number", yn = typeof y === "number";
      var c = (xn && yn) ? x - y : (xn ? -1 : (yn ? 1 : (x < y ? -1 : (x > y ? 1 : 0))));
      return asc ? c : -c;
    });
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) { frag.appendChild(r); });
    tbody.appendChild(frag);
  }
  function initTables() {
    document.querySelectorAll("table.sortable").forEach(function (table) {
      table.querySelectorAll("thead th").forEach(function (th, idx) {
        th.addEventListener("click", function () { sortBy(table, idx, th); });
      });
    });
    document.querySelectorAll("input[data-filter]").forEach(function (input) {
      input.addEventListener("input", function () { applyFilter(document.getElementById(input.getAttribute("data-filter"))); });
    });
    document.querySelectorAll("[data-colfilter], [data-slowonly]").forEach(function (ctl) {
      var id = ctl.getAttribute("data-colfilter") || ctl.getAttribute("data-slowonly");
      ctl.addEventListener(ctl.tagName === "SELECT" || ctl.type === "checkbox" ? "change" : "input",
        function () { applyFilter(document.getElementById(id)); });
    });
  }
  // Every table can be saved as CSV: numbers from their sort keys (data-v: the full-precision value behind the
  // rounded text), other cells as shown; every row, filtered or not. Text that a spreadsheet would run as a formula
  // (= + - @ at the start, not a number) is prefixed with an apostrophe.
  function csvCell(td) {
    var v = td.getAttribute("data-v");
    var t = (v !== null && v !== "" && !isNaN(Number(v))) ? v : td.textContent.replace(/\s+/g, " ").trim();
    if (/^[=+\-@\t\r]/.test(t) && isNaN(Number(t))) { t = "'" + t; }
    return /[",\n;]/.test(t) ? '"' + t.replace(/"/g, '""') + '"' : t;
  }
  function tableCsv(table) {
    var lines = [];
    var head = table.tHead && table.tHead.rows.length ? table.tHead.rows[table.tHead.rows.length - 1] : null;
    if (head) { lines.push(Array.prototype.map.call(head.cells, csvCell).join(",")); }
    Array.prototype.forEach.call(table.tBodies, function (tb) {
      Array.prototype.forEach.call(tb.rows, function (r) { lines.push(Array.prototype.map.call(r.cells, csvCell).join(",")); });
    });
    return lines.join("\r\n") + "\r\n";
  }
  function initCsvButtons(root) {
    var label = document.body.getAttribute("data-save-csv");
    if (!label) { return; }
    // a table whose CSV file the report wrote (a.csv-download naming it: every row, even those the page leaves
    // out) keeps that one control: a second "CSV" beside it would be ambiguous
    var filed = {};
    document.querySelectorAll("a.csv-download[data-csv-for]").forEach(function (a) { filed[a.getAttribute("data-csv-for")] = true; });
    (root || document).querySelectorAll("main table").forEach(function (table, i) {
      if (table.getAttribute("data-csv") === "done" || !table.tBodies.length || !table.tBodies[0].rows.length) { return; }
      if (table.id && Object.prototype.hasOwnProperty.call(filed, table.id)) { table.setAttribute("data-csv", "file"); return; }
      table.setAttribute("data-csv", "done");
      var b = document.createElement("button");
      b.type = "button";
      b.className = "csv-save";
      b.textContent = label;
      b.title = document.body.getAttribute("data-save-csv-title") || "";
      b.addEventListener("click", function () {
        var blob = new Blob(["\ufeff" + tableCsv(table)], { type: "text/csv;charset=utf-8" });
        var a = document.createElement("a");
        var page = (location.pathname.split("/").pop() || "page").replace(/\.html?$/, "");
        a.href = URL.createObjectURL(blob);
        a.download = page + "-" + (table.id || "table-" + (i + 1)) + ".csv";
        document.body.appendChild(a);
        a.click();
        setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 0);
      });
      var anchor = table.parentElement && table.parentElement.classList.contains("scroll") ? table.parentElement : table;
      anchor.parentElement.insertBefore(b, anchor);
    });
  }
  window.msrCsv = { table: tableCsv, init: initCsvButtons };  // (tests; the rank view of the single file)

  // A row shows when it contains the free-text filter, every column filter matches its cell exactly,
  // and (with "slow only") it is marked slow.
  function applyFilter(table) {
    if (!table) { return; }
    var id = table.id;
    var text = document.querySelector("input[data-filter='" + id + "']");
    var q = text ? text.value.trim().toLowerCase() : "";
    var cols = [];
    document.querySelectorAll("[data-colfilter='" + id + "']").forEach(function (c) {
      if (c.value !== "") { cols.push([Number(c.getAttribute("data-col")), c.value.trim().toLowerCase()]); }
    });
    var slow = document.querySelector("[data-slowonly='" + id + "']");
    var slowOnly = slow && slow.checked;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      var ok = !q || row.textContent.toLowerCase().indexOf(q) >= 0;
      for (var i = 0; ok && i < cols.length; i++) {
        var cell = row.cells[cols[i][0]];
        ok = !!cell && cell.textContent.trim().toLowerCase().split(" ")[0] === cols[i][1];
      }
      if (ok && slowOnly) { ok = row.classList.contains("slow"); }
      row.style.display = ok ? "" : "none";
    });
  }

  // ---- cluster step trace: average / any step ---------------------------------------------------
  function fmt(v, kind) {
    if (v === null || v === undefined || v === "") { return kind === "ms" ? "—" : ""; }
    if (kind === "ms") { return Number(v).toLocaleString("en-US", { minimumFractionDigits: 3, maximumFractionDigits: 3 }); }
    return String(v);
  }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function relHref(href) {
    // links in embedded data are resolved for this page (and this mode) when the report is written
    return href || "#";
  }
  function renderRows(table, columns, rows) {
    var tbody = table.tBodies[0];
    var frag = document.createDocumentFragment();
    rows.forEach(function (row) {
      var tr = el("tr", { id: "rank-" + row.rank });
      if (row.slow) { tr.className = "slow"; }
      columns.forEach(function (c) {
        var v = row[c.key], td;
        if (c.fmt === "rank") {
          td = el("td", { "data-v": row.rank });
          td.appendChild(el("a", { href: relHref(row.href) }, String(row.rank)));
        } else {
          var cls = c.fmt === "text" ? "" : "num";
          if (row.hot && row.hot.indexOf(c.key) >= 0) { cls += " hot"; }  // marks hold in every step
          td = el("td", { "class": cls, "data-v": v === null || v === undefined ? "" : v }, fmt(v, c.fmt));
        }
        tr.appendChild(td);
      });
      frag.appendChild(tr);
    });
    tbody.textContent = "";
    tbody.appendChild(frag);
  }
  function initStepSelect() {
    var sel = document.getElementById("step-select");
    var dataEl = document.getElementById("step-table-data");
    var table = document.getElementById("step-table");
    if (!sel || !dataEl || !table) { return; }
    var data = JSON.parse(dataEl.textContent);
    var original = table.tBodies[0].innerHTML;
    sel.addEventListener("change", function () {
      if (sel.value === "avg") { table.tBodies[0].innerHTML = original; }
      else { renderRows(table, data.columns, datasetRows(data.steps[sel.value])); }
      applyFilter(table);
    });
  }

  // ---- single file: one rank at a time ------------------------------------------------------------
  function initRankSelect() {
    var sel = document.getElementById("rank-select");
    var dataEl = document.getElementById("rank-data");
    if (!sel || !dataEl) { return; }
    var data = JSON.parse(dataEl.textContent);
    var metaEl = document.getElementById("rank-meta");  // the phases the ranks share; phase key -> step-line label
    var meta = metaEl ? JSON.parse(metaEl.textContent) : {};
    function linesOf(rows, phases) {
      var labels = meta.line_labels || {}, out = [];
      rows.forEach(function (r) {
        phases.forEach(function (p) {
          if (labels[p.key] && r.step !== null && r[p.key] !== null && r[p.key] !== undefined) {
            out.push({ step: r.step, phase: labels[p.key], value: r[p.key] });
          }
        });
      });
      return out;
    }
    var fig = document.getElementById("fig-rank-lines");
    var template = fig ? specOf(fig) : null;
    var view = document.getElementById("rank-view");
    function show(rank) {
      var d = data[rank];
      view.textContent = "";
      if (!d) { return; }
      var phases = d.phases || meta.phases || [];
      var lines = d.lines || linesOf(d.rows, phases);
      var facts = el("table", { "class": "facts" });
      d.facts.forEach(function (kv) { var tr = el("tr"); tr.appendChild(el("th", {}, kv[0])); tr.appendChild(el("td", {}, kv[1])); facts.appendChild(tr); });
      view.appendChild(facts);
      if (d.rows.length) {
        var t = el("table", { "class": "sortable" });
        var hr = el("tr"); hr.appendChild(el("th", {}, view.getAttribute("data-step") || "Step"));
        phases.forEach(function (p) { hr.appendChild(el("th", {}, p.label)); });
        var thead = el("thead"); thead.appendChild(hr); t.appendChild(thead);
        var tb = el("tbody");
        d.rows.forEach(function (r) {
          var tr = el("tr"); tr.appendChild(el("td", { "class": "num" }, r.step === null ? "—" : String(r.step)));
          phases.forEach(function (p) {
            var v = r[p.key];
            tr.appendChild(el("td", { "class": "num", "data-v": v === null || v === undefined ? "" : String(v) }, fmt(v, "ms")));
          });
          tb.appendChild(tr);
        });
        t.appendChild(tb); view.appendChild(t);
        initCsvButtons(view);
      } else {
        view.appendChild(el("p", { "class": "muted" }, view.getAttribute("data-none") || "No step trace for this rank."));
      }
      d.issues.forEach(function (i) { view.appendChild(el("p", { "class": "muted" }, i.severity + ": " + (i.file || "(run)") + ": " + i.problem)); });
      if (fig && template) {
        if (lines.length) {
          fig.style.display = "";
          var spec = Object.assign({}, template, { datasets: { steps: lines } });
          embed(fig, spec);
        } else { fig.style.display = "none"; fig.setAttribute("data-rendered", "true"); }
      }
    }
    sel.addEventListener("change", function () { show(sel.value); });
    function fromHash() {
      var m = /^#rank-page-(\d+)$/.exec(location.hash);
      if (m && data[m[1]]) { sel.value = m[1]; show(m[1]); document.getElementById("ranks").scrollIntoView(); }
    }
    window.addEventListener("hashchange", fromHash);
    show(sel.value);
    fromHash();
  }

  // ---- step selector driving charts (site/step_views.py): swap each chart's named datasets --------------
  function stepDataOf(fig) {
    if (fig._msrSteps === undefined) {
      var el = fig.querySelector("script.step-data");
      fig._msrSteps = el ? JSON.parse(el.textContent) : null;
    }
    return fig._msrSteps;
  }
  function stepRows(fig, name, step) {
    var sd = stepDataOf(fig), orig = (fig._msrSpec.datasets || {})[name] || [];
    if (step === "avg") { return orig; }
    var fields = sd.fields[name], rows = ((sd.steps[step] || {})[name]) || [], join = sd.join, byKey = {};
    if (join) { orig.forEach(function (o) { byKey[o[join]] = o; }); }
    return rows.map(function (vals) {
      var row = {};
      fields.forEach(function (f, i) { row[f] = vals[i]; });
      var o = join ? byKey[row[join]] : null;
      if (o) { Object.keys(o).forEach(function (k) { if (!(k in row)) { row[k] = o[k]; } }); }
      return row;
    });
  }
  function hasSignal(view, name) {
    try { view.signal(name); return true; } catch (e) { return false; }
  }
  function showStep(fig, step) {
    // a chart's own per-step datasets are swapped in; charts over steps (and the heatmap) mark the step through
    // their `msrstep` parameter (charts/steps.py STEP_PARAM); the axis title names the step
    var view = fig._msrView, sd = stepDataOf(fig);
    if (!view) { fig._msrPendingStep = step; return; }
    var touched = false;
    if (sd) {
      Object.keys(sd.fields).forEach(function (name) { view.data(name, stepRows(fig, name, step)); });
      touched = true;
    }
    if (hasSignal(view, "msrstep")) { view.signal("msrstep", step === "avg" ? null : Number(step)); touched = true; }
    var meta = (fig._msrSpec || {}).usermeta || {}, title = meta.msr_step_title;
    if (title && hasSignal(view, "msr_step_title")) {
      view.signal("msr_step_title", step === "avg" ? title.avg : title.step.replace("{n}", step));
    }
    var cap = fig.querySelector("figcaption");
    if (cap && meta.msr_step_caption) {  // a caption that speaks of the average says which step is drawn
      if (fig._msrAvgCaption === undefined) { fig._msrAvgCaption = cap.textContent; }
      cap.textContent = step === "avg" ? fig._msrAvgCaption : meta.msr_step_caption.replace("{n}", step);
    }
    if (touched) { view.runAsync().then(function () { fig.setAttribute("data-step", step); }); }
  }
  function initStepViews() {
    if (!document.querySelector("select[data-step-views]")) { return; }
    var figs = document.querySelectorAll("figure.chart");
    figs.forEach(function (fig) {
      fig.addEventListener("msr-drawn", function () {
        if (fig._msrPendingStep !== undefined) { showStep(fig, fig._msrPendingStep); }
      });
    });
    var sels = document.querySelectorAll("select[data-step-views]"), syncing = false;
    sels.forEach(function (sel) {
      sel.addEventListener("change", function () {
        figs.forEach(function (fig) { showStep(fig, sel.value); });
        if (syncing) { return; }
        syncing = true;  // the page's other step selectors (the step-trace table's) follow
        sels.forEach(function (other) {
          if (other !== sel && other.value !== sel.value) { other.value = sel.value; other.dispatchEvent(new Event("change")); }
        });
        syncing = false;
      });
    });
  }

  // ---- communication drill-down: devices brushed in the node-link graph restrict the matrix and box plots --
  function within(v, ext) { return ext && v >= Math.min(ext[0], ext[1]) && v <= Math.max(ext[0], ext[1]); }
  function initCommDrill() {
    var graph = document.getElementById("fig-comm-graph");
    if (!graph) { return; }
    var out = document.getElementById("comm-selection");
    function broadcast(ids) {
      document.querySelectorAll("figure.chart").forEach(function (fig) {
        var v = fig._msrView;
        if (!v || fig === graph) { return; }
        try { v.signal("sel"); } catch (e) { return; }  // a chart without the selection parameter
        v.signal("sel", ids);
        v.resize();  // relayout: a chart drawn empty (the host drill-down) gets room for its legend's labels
        v.runAsync().then(function () { fig.setAttribute("data-selected", ids.join(",")); });
      });
      if (out) {
        out.textContent = ids.length ? out.getAttribute("data-some").replace("{ranks}", ids.join(", "))
          .replace("{n}", String(ids.length)) : out.getAttribute("data-none");
      }
      graph.setAttribute("data-selected", ids.join(","));
    }
    // a host-level graph (above 64 ranks): hosts picked by brush or click stand for their devices, whole hosts,
    // the first ones up to the drill-down's device cap
    var drillOut = document.getElementById("comm-drill-selection");
    // nothing to draw until hosts are picked: the line above says so, the figure is folded away (kept at its width,
    // so the view is laid out and drawn as usual and shows at once when hosts are picked)
    var drillFig = document.getElementById("fig-comm-drill");
    if (drillFig) { drillFig.classList.add("folded"); }
    function pickHosts(hosts) {
      var max = Number(drillOut ? drillOut.getAttribute("data-max") : 64), ids = [], used = [];
      hosts.forEach(function (h) {
        var m = String(h.members).split(",");
        if (ids.length + m.length <= max || !used.length) { ids = ids.concat(m.slice(0, max)); used.push(h.id); }
      });
      if (drillFig) { drillFig.classList.toggle("folded", !ids.length); }
      broadcast(ids);
      if (!drillOut) { return; }
      var key = !hosts.length ? "data-none" : used.length < hosts.length ? "data-capped" : "data-some";
      drillOut.textContent = drillOut.getAttribute(key).replace("{h}", String(hosts.length))
        .replace("{k}", String(used.length)).replace("{hosts}", used.join(", ")).replace("{n}", String(ids.length))
        .replace("{max}", String(max));
      graph.setAttribute("data-hosts", used.join(","));
    }
    // a cell of the host drill-down opens the sending rank's page: the link of its row in the rank table (already
    // resolved for this page and output mode), so the drill data carries no links
    var drill = document.getElementById("fig-comm-drill");
    if (drill) {
      drill.addEventListener("msr-drawn", function (ev) {
        ev.detail.addEventListener("click", function (event, item) {
          var d = item && item.datum, a = d && d.src !== undefined &&
            document.querySelector("#comm-rank-" + Number(d.src) + " a[href]");
          if (a) { window.location.href = a.href; }
        });
      });
    }
    graph.addEventListener("msr-drawn", function (ev) {
      var view = ev.detail, clicked = 0;
      try { view.signal("devsel"); } catch (e) { return; }  // a graph without the brush
      view.addSignalListener("devsel", function (name, value) {
        var inside = [];
        if (value && value.x && value.y) {
          view.data("nodes").forEach(function (n) { if (within(n.x, value.x) && within(n.y, value.y)) { inside.push(n); } });
        } else if (Date.now() - clicked < 400) { return; }  // the click that picked a host also cleared the brush
        if (inside.length && inside[0].members !== undefined) { pickHosts(inside); return; }
        if (!inside.length && view.data("nodes").length && view.data("nodes")[0].members !== undefined) {
          pickHosts([]); return;
        }
        broadcast(inside.map(function (n) { return String(n.id); }));
      });
      view.addEventListener("click", function (event, item) {
        var d = item && item.datum;
        if (d && d.members !== undefined && d.id !== undefined) { clicked = Date.now(); pickHosts([d]); }
      });
    });
  }

  function initGraphs() {
    // strategy graphs: click a block to show its operators; zoom buttons scale the inline SVG
    document.querySelectorAll("svg.strategy-graph .block").forEach(function (g) {
      function open() {
        var id = g.getAttribute("data-block");
        var panel = document.getElementById(id);
        if (!panel) { return; }
        var svg = g.ownerSVGElement;
        svg.querySelectorAll(".block.selected").forEach(function (b) { b.classList.remove("selected"); });
        var wasOpen = !panel.hidden;
        document.querySelectorAll(".block-detail").forEach(function (p) { if (p.id.split("-b")[0] === id.split("-b")[0]) { p.hidden = true; } });
        if (!wasOpen) { panel.hidden = false; g.classList.add("selected"); panel.scrollIntoView({ block: "nearest" }); }
      }
      g.addEventListener("click", open);
      g.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(); } });
    });
    document.querySelectorAll("[data-close]").forEach(function (b) {
      b.addEventListener("click", function () { document.getElementById(b.getAttribute("data-close")).hidden = true; });
    });
    document.querySelectorAll("[data-zoom]").forEach(function (b) {
      b.addEventListener("click", function () {
        var wrap = document.getElementById(b.getAttribute("data-target"));
        var svg = wrap && wrap.querySelector("svg");
        if (!svg) { return; }
        var w0 = parseFloat(svg.getAttribute("data-w") || svg.getAttribute("width"));
        var h0 = parseFloat(svg.getAttribute("data-h") || svg.getAttribute("height"));
        svg.setAttribute("data-w", w0); svg.setAttribute("data-h", h0);
        var z = parseFloat(svg.getAttribute("data-z") || "1");
        var mode = b.getAttribute("data-zoom");
        z = mode === "in" ? z * 1.25 : mode === "out" ? z / 1.25 : Math.min(1, wrap.clientWidth / w0);
        svg.setAttribute("data-z", z);
        svg.setAttribute("width", w0 * z); svg.setAttribute("height", h0 * z);
      });
    });
  }

  function reportResources() {
    // For tests and the curious: how many network resources did this page request? (should be 0)
    var ext = performance.getEntriesByType("resource").filter(function (e) { return /^https?:/i.test(e.name); });
    document.body.setAttribute("data-network-requests", String(ext.length));
  }

  function main() {
    if (document.getElementById("rank-data")) { document.body.setAttribute("data-single", "1"); }
    initTables();
    initGraphs();
    initStepSelect();
    initStepViews();
    initCommDrill();
    drawCharts();
    initRankSelect();
    initCsvButtons();
    reportResources();
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", main); } else { main(); }
})();
