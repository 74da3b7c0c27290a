// The report's interactive parts: the tests x providers matrix (drawn on demand: its data is
// parsed only when asked for) with filters, search and a panel with each case; links from
// other sections to a case's cell; the comparison's "show every row" toggle; the
// disagreements' juror and direction filters. Reads the JSON in <script id="cases-data">;
// builds the DOM with textContent only (outputs are never parsed as HTML); makes no request.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);

  const toggle = $("show-all-changes");
  if (toggle) toggle.addEventListener("change", () => {
    document.querySelectorAll("#changes-table tr.unchanged").forEach((tr) => { tr.hidden = !toggle.checked; });
  });

  function filterDisagreements() {
    const juror = $("f-juror").value, direction = $("f-direction").value;
    let shown = 0;
    const rows = document.querySelectorAll("#disagreements tbody tr");
    rows.forEach((tr) => {
      tr.hidden = (juror && tr.dataset.juror !== juror) || (direction && tr.dataset.direction !== direction);
      if (!tr.hidden) shown += 1;
    });
    $("disagreement-count").textContent = `${shown} of ${rows.length} shown`;
  }
  if ($("f-juror")) {
    ["f-juror", "f-direction"].forEach((id) => $(id).addEventListener("change", filterDisagreements));
    filterDisagreements();
  }

  let matrix = null;
  function showMatrix() {
    if (!matrix) matrix = makeMatrix();
    $("matrix-area").hidden = false;
    $("show-matrix").hidden = true;
    return matrix;
  }
  $("show-matrix").addEventListener("click", () => showMatrix());
  document.querySelectorAll("button.case-link").forEach((b) => b.addEventListener("click", () => {
    showMatrix().focus(Number(b.dataset.case));
  }));
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") $("panel").hidden = true; });
  $("panel-close").addEventListener("click", () => { $("panel").hidden = true; });

  function makeMatrix() {
  const data = JSON.parse(document.getElementById("cases-data").textContent);
  const PAGE = 100;
  let limit = PAGE;
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };
  const grid = data.rows.map(() => data.columns.map(() => []));
  data.cells.forEach((cell) => grid[cell.row][cell.col].push(cell));

  function option(select, value, label) {
    const o = el("option", null, label);
    o.value = value;
    select.appendChild(o);
  }
  data.columns.forEach((c, i) => option($("f-provider"), String(i), c));
  data.types.forEach((t) => option($("f-type"), t, t));
  data.metrics.forEach((m) => option($("f-metric"), m, m));

  function filters() {
    return {
      status: $("f-status").value, col: $("f-provider").value, type: $("f-type").value,
      metric: $("f-metric").value, text: $("f-search").value.trim().toLowerCase(),
      order: $("f-order").value,
    };
  }

  // A cell matches when its status, and the assertions of the chosen type / metric, match.
  function cellMatches(cell, f) {
    if (f.status && cell.status !== f.status) return false;
    if (f.type || f.metric) {
      const hit = cell.asserts.some((a) => (!f.type || a[0] === f.type) &&
        (!f.metric || a[1] === f.metric) && (!f.status || f.status === "pass" || a[2] === f.status));
      if (!hit) return false;
    }
    return true;
  }

  function rowText(r) {
    const texts = [data.rows[r].test, data.rows[r].vars || ""];
    grid[r].forEach((cells) => cells.forEach((c) => texts.push(c.output || "")));
    return texts.join("\n").toLowerCase();
  }
  const searchable = data.rows.map((_, r) => rowText(r));

  function visibleRows(f) {
    const cols = f.col === "" ? data.columns.map((_, i) => i) : [Number(f.col)];
    let rows = [];
    data.rows.forEach((_, r) => {
      if (f.text && !searchable[r].includes(f.text)) return;
      const cells = cols.flatMap((c) => grid[r][c]);
      const matching = cells.filter((cell) => cellMatches(cell, f));
      if (matching.length) rows.push({ r, bad: cells.filter((c) => c.status === "fail" || c.status === "error").length });
    });
    if (f.order === "failing") rows.sort((a, b) => b.bad - a.bad || a.r - b.r);
    return { rows, cols };
  }

  function statusCell(cell, f) {
    const button = el("button", "cell " + (cell.status || "none"));
    button.type = "button";
    button.dataset.case = cell.case;
    const score = cell.score === null || cell.score === undefined ? "" : " " + cell.score.toFixed(2);
    button.appendChild(el("span", "badge", (cell.status || "?").toUpperCase() + score));
    button.appendChild(el("span", "preview", (cell.output === null ? "(null output)" : cell.output).slice(0, 160)));
    if (!cellMatches(cell, f)) button.classList.add("dim");
    button.addEventListener("click", () => openCell(cell));
    return button;
  }

  function render() {
    const f = filters();
    const { rows, cols } = visibleRows(f);
    const table = $("matrix");
    table.replaceChildren();
    const head = el("tr");
    head.appendChild(el("th", null, "test"));
    head.appendChild(el("th", null, "vars"));
    cols.forEach((c) => head.appendChild(el("th", null, data.columns[c])));
    const thead = el("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    const body = el("tbody");
    rows.slice(0, limit).forEach(({ r }) => {
      const tr = el("tr");
      tr.dataset.row = r;
      tr.appendChild(el("td", "test", data.rows[r].test));
      tr.appendChild(el("td", "vars", data.rows[r].vars || ""));
      cols.forEach((c) => {
        const td = el("td");
        grid[r][c].forEach((cell) => td.appendChild(statusCell(cell, f)));
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    table.appendChild(body);
    $("matrix-count").textContent = `${rows.length} of ${data.rows.length} tests match` +
      (rows.length > limit ? ` (first ${limit} drawn)` : "");
    $("more").hidden = rows.length <= limit;
  }

  function field(parent, name, value, cls) {
    if (value === null || value === undefined || value === "") return;
    parent.appendChild(el("h4", null, name));
    parent.appendChild(el("pre", cls || null, value));
  }

  function openCell(cell) {
    const panel = $("panel-body");
    panel.replaceChildren();
    const row = data.rows[cell.row];
    panel.appendChild(el("h3", null, `${row.test} — ${data.columns[cell.col]}`));
    const score = cell.score === null ? "" : ` · score ${Number(cell.score.toPrecision(4))}`;
    panel.appendChild(el("p", "status-line " + cell.status,
      `${(cell.status || "").toUpperCase()}${score} · case ${cell.case}` +
      (cell.latency !== null ? ` · ${cell.latency} ms` : "") +
      (cell.cost !== null ? ` · $${cell.cost}` : "")));
    field(panel, "reason", cell.reason);
    field(panel, "output", cell.output === null ? "(null output)" : cell.output, "output");
    field(panel, "prompt (rendered)", cell.rendered);
    field(panel, "prompt", cell.prompt);
    field(panel, "vars", cell.vars);
    panel.appendChild(el("h4", null, "assertions"));
    const table = el("table", "asserts");
    const head = el("tr");
    ["type", "metric", "status", "score", "value (rendered)", "reason"].forEach((h) => head.appendChild(el("th", null, h)));
    table.appendChild(head);
    cell.asserts.forEach((a) => {
      const tr = el("tr", a[2]);
      tr.appendChild(el("td", null, (a[6] ? "↳ " : "") + a[0]));
      tr.appendChild(el("td", null, a[1] || ""));
      tr.appendChild(el("td", "status", a[2]));
      tr.appendChild(el("td", "num", a[3] === null ? "" : a[3]));
      tr.appendChild(el("td", "value", a[5] === null ? "" : a[5]));
      tr.appendChild(el("td", "reason", a[4] || ""));
      table.appendChild(tr);
    });
    panel.appendChild(table);
    $("panel").hidden = false;
  }

  ["f-status", "f-provider", "f-type", "f-metric", "f-order"].forEach((id) =>
    $(id).addEventListener("change", () => { limit = PAGE; render(); }));
  $("f-search").addEventListener("input", () => { limit = PAGE; render(); });
  $("more").addEventListener("click", () => { limit += PAGE; render(); });
  render();

  // A case named by another section: every filter cleared, its row drawn, marked and
  // scrolled to, its cell opened.
  function focus(caseId) {
    const cell = data.cells.find((c) => c.case === caseId);
    if (!cell) return;
    ["f-status", "f-provider", "f-type", "f-metric"].forEach((id) => { $(id).value = ""; });
    $("f-search").value = "";
    const at = visibleRows(filters()).rows.findIndex((x) => x.r === cell.row);
    limit = Math.max(PAGE, Math.ceil((at + 1) / PAGE) * PAGE);
    render();
    const tr = document.querySelector(`#matrix tr[data-row="${cell.row}"]`);
    document.querySelectorAll("#matrix tr.focus").forEach((x) => x.classList.remove("focus"));
    if (tr) { tr.classList.add("focus"); tr.scrollIntoView({ block: "center" }); }
    openCell(cell);
  }
  return { focus };
  }
})();
