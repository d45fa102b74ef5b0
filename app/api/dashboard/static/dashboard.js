/* FairSolve dashboard: small hand-written helpers for the server-rendered pages.
 * The API is called with the session cookie (same origin); no other network access. */
(function () {
  "use strict";

  const ACTIVE = ["queued", "waiting", "running"];
  const POLL_MS = 1000;
  const FOLLOW_MS = 2500;  // a running job's live charts are asked for at most this often

  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

  /* Signing out revokes the session before the browser leaves the page: a poll answered 401 in between must not
   * send it to "/signin?next=this page" instead of where the sign-out goes. */
  let signingOut = false;
  document.addEventListener("submit", (event) => {
    if (event.target.matches && event.target.matches("form.signout")) signingOut = true;
  }, true);
  /* A poll that sees its page change reloads it, unless the page is signing out: the reload, answered after the
   * session is revoked, would also land on "/signin?next=this page" (a job that ended as its page signed out). */
  const refresh = () => { if (!signingOut) location.reload(); };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("data-")) node.setAttribute(k, v);
      else if (k in node) node[k] = v;
      else node.setAttribute(k, v);
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  function showMessage(text, kind) {
    const box = $("#messages");
    if (!box) return;
    const msg = el("p", { class: "message " + (kind || "error"), text: text });
    box.append(msg);
    if (kind === "info") setTimeout(() => msg.remove(), 6000);
  }

  /* A readable message from an API error body: a string detail, or "field: message" items. */
  function errorText(status, data) {
    if (data && typeof data.detail === "string") return data.detail;
    if (data && Array.isArray(data.detail)) {
      return data.detail.map((d) => locText(d.loc) + ": " + d.msg).join("; ");
    }
    if (status === 401) return "Your session has ended; sign in again.";
    if (status >= 500) return "The server could not complete the request (HTTP " + status + ").";
    return "The request failed (HTTP " + status + ").";
  }

  function locText(loc) {
    return (loc || []).filter((p, i) => !(i === 0 && p === "body")).join(".");
  }

  async function api(method, url, body) {
    const opts = { method: method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(url, opts);
    } catch (err) {
      return { ok: false, status: 0, data: { detail: "The server cannot be reached." } };
    }
    let data = null;
    try {
      data = await response.json();
    } catch (err) {
      data = null;
    }
    if (response.status === 401 && !signingOut) {
      location.href = "/signin?next=" + encodeURIComponent(location.pathname + location.search);
    }
    return { ok: response.ok, status: response.status, data: data };
  }

  /* ------------------------------------------------------------ charts */

  async function renderChart(div) {
    const res = div.dataset.figure
      ? { ok: true, status: 200, data: parseJSON(div.dataset.figure) }
      : await api("GET", div.dataset.chartUrl);
    div.classList.remove("loading");
    if (!res.ok) {
      div.replaceChildren(el("p", { class: "chart-empty", text: errorText(res.status, res.data) }));
      div.dataset.state = "empty";
      return;
    }
    const fig = res.data || {};
    if (!Array.isArray(fig.data) || fig.data.length === 0) {
      div.replaceChildren(el("p", { class: "chart-empty", text: "No data to draw for this chart." }));
      div.dataset.state = "empty";
      return;
    }
    if (typeof Plotly === "undefined") {
      div.replaceChildren(el("p", { class: "chart-empty", text: "plotly.js did not load." }));
      return;
    }
    const layout = Object.assign({}, fig.layout || {}, { autosize: true });
    await Plotly.newPlot(div, fig.data, layout, { responsive: true, displaylogo: false });
    div.dataset.state = "rendered";
    div.dataset.traces = String(fig.data.length);
    if (div.dataset.click === "job") {
      div.on("plotly_click", (ev) => {
        const point = ev && ev.points && ev.points[0];
        if (!point) return;
        const cd = point.customdata;
        const jobId = Array.isArray(cd) ? cd[0] : cd;
        if (jobId) location.href = "/jobs/" + encodeURIComponent(jobId);
      });
    }
  }

  /* A running job's live chart (data-live), fetched with the cursor (X-Chart-Cursor) of the figure it shows: the
     route answers 204 while that is current, else the redrawn figure, drawn in place (Plotly.react), no reload. */
  async function followChart(div) {
    const cursor = div.dataset.cursor;
    const url = div.dataset.chartUrl + (cursor ? "?cursor=" + encodeURIComponent(cursor) : "");
    let response;
    try {
      response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    } catch (err) {
      return;
    }
    const next = response.headers.get("X-Chart-Cursor") || "";
    if (response.status === 204) return;
    div.classList.remove("loading");
    if (!response.ok) {  // nothing to draw yet: say why, and ask again with this cursor
      if (div.dataset.state !== "rendered") {
        let data = null;
        try { data = await response.json(); } catch (err) { data = null; }
        div.replaceChildren(el("p", { class: "chart-empty", text: errorText(response.status, data) }));
        div.dataset.state = "empty";
      }
      div.dataset.cursor = next;
      return;
    }
    const fig = await response.json();
    if (typeof Plotly === "undefined" || !Array.isArray(fig.data) || fig.data.length === 0) return;
    const layout = Object.assign({}, fig.layout || {}, { autosize: true });
    if (div.dataset.state === "rendered") await Plotly.react(div, fig.data, layout, { responsive: true, displaylogo: false });
    else {
      div.replaceChildren();
      await Plotly.newPlot(div, fig.data, layout, { responsive: true, displaylogo: false });
    }
    div.dataset.state = "rendered";
    div.dataset.traces = String(fig.data.length);
    div.dataset.cursor = next;
  }

  function renderCharts(skip) {
    $$(".chart[data-chart-url], .chart[data-figure]").forEach((div) => {
      if (skip && skip(div)) return;
      div.classList.add("loading");
      renderChart(div).catch(() => {
        div.replaceChildren(el("p", { class: "chart-empty", text: "This chart could not be drawn." }));
      });
    });
  }

  /* ------------------------------------------------------------ jobs */

  function progressOf(job) {
    const p = job.progress || {};
    const done = p.iteration || 0;
    const total = p.max_iterations || 0;
    const pct = job.status === "succeeded" ? 100 : total ? Math.min(100, (100 * done) / total) : 0;
    return { done: done, total: total, pct: pct };
  }

  function setStatus(node, status) {
    node.textContent = status;
    node.className = "status status-" + status;
  }

  function initJobsList() {
    const table = $("#jobs-table");
    if (!table) return;
    const rows = () => $$("tr[data-job-id]", table);
    const anyActive = () => rows().some((r) => ACTIVE.includes(r.dataset.status));
    async function poll() {
      if (!anyActive()) return;
      const status = new URLSearchParams(location.search).get("status");
      const res = await api("GET", "/api/v1/jobs?limit=200" + (status ? "&status=" + encodeURIComponent(status) : ""));
      if (res.ok && Array.isArray(res.data)) {
        const newest = Math.max(...rows().map((r) => Date.parse(r.dataset.created)));
        if (res.data.some((j) => Date.parse(j.created_at) > newest)) {
          refresh();  // a job submitted since the page was drawn
          return;
        }
        const byId = new Map(res.data.map((j) => [j.id, j]));
        for (const row of rows()) {
          const job = byId.get(row.dataset.jobId);
          if (!job) continue;
          row.dataset.status = job.status;
          setStatus($("[data-field=status]", row), job.status);
          const p = progressOf(job);
          $("[data-field=progress]", row).style.width = p.pct.toFixed(1) + "%";
          $("[data-field=iterations]", row).textContent = p.done + " / " + p.total;
        }
      }
      setTimeout(poll, POLL_MS);
    }
    setTimeout(poll, POLL_MS);
  }

  function initJobPage() {
    const box = $("#job");
    const following = box && ACTIVE.includes(box.dataset.status);
    const live = following ? $$(".chart[data-live]") : [];
    renderCharts((div) => live.includes(div));  // the live ones are drawn by the poll below
    if (!box) return;
    const jobId = box.dataset.jobId;
    const cancel = $("#cancel-job");
    if (cancel) {
      cancel.addEventListener("click", async () => {
        cancel.disabled = true;
        const res = await api("POST", "/api/v1/jobs/" + encodeURIComponent(jobId) + "/cancel");
        if (res.ok) {
          showMessage("Cancellation requested; a running job stops at its next check.", "info");
          setStatus($("#job-status"), res.data.status);
          box.dataset.status = res.data.status;
          if (!ACTIVE.includes(res.data.status)) location.reload();
        } else {
          cancel.disabled = false;
          showMessage(errorText(res.status, res.data));
        }
      });
    }
    if (!following) return;
    async function poll() {
      const res = await api("GET", "/api/v1/jobs/" + encodeURIComponent(jobId));
      if (res.ok) {
        const job = res.data;
        const p = progressOf(job);
        setStatus($("#job-status"), job.status);
        $("#job-progress").style.width = p.pct.toFixed(1) + "%";
        $("#job-iterations").textContent = p.done + " / " + p.total;
        if (!ACTIVE.includes(job.status)) {
          refresh();  // metrics, charts and downloads are rendered by the server
          return;
        }
      }
      if (Date.now() - followed >= FOLLOW_MS) {  // a redrawn figure costs the server a chart build: not every poll
        followed = Date.now();
        await Promise.all(live.map((div) => followChart(div).catch(() => null)));
      }
      setTimeout(poll, POLL_MS);
    }
    let followed = Date.now();
    Promise.all(live.map((div) => followChart(div).catch(() => null))).then(() => setTimeout(poll, POLL_MS));
  }

  function initSweepPage() {
    renderCharts();
    const box = $("#sweep");
    if (!box || box.dataset.active !== "true") return;
    async function poll() {  // the server renders the finished sweep's tables and chart
      const res = await api("GET", "/api/v1/sweeps/" + encodeURIComponent(box.dataset.sweepId));
      if (res.ok && res.data.status !== "running") { refresh(); return; }
      if (res.ok) $("#sweep-progress").textContent = Object.entries(res.data.progress)
        .filter(([, n]) => n).map(([k, n]) => k + " " + n).join(" · ");
      setTimeout(poll, POLL_MS);
    }
    setTimeout(poll, POLL_MS);
  }

  /* ------------------------------------------------------------ datasets */

  function initDatasets() {
    const zone = $("#dropzone");
    const input = $("#file-input");
    if (!zone || !input) return;
    const bar = $("#upload-progress");
    const fill = $("#upload-fill");
    const text = $("#upload-text");

    function upload(file) {
      if (!file) return;
      const form = new FormData();
      form.append("file", file, file.name);
      const name = $("#upload-name").value.trim();
      if (name) form.append("name", name);
      const header = $("#upload-header").value;
      const columns = $("#upload-columns").value.trim();
      const missing = $("#upload-missing").value;
      if (header) form.append("header", header);
      if (columns) form.append("column_names", columns);
      if (missing.trim()) form.append("missing_values", missing);
      const xhr = new XMLHttpRequest();
      xhr.open("POST", "/api/v1/datasets");
      xhr.withCredentials = true;
      xhr.setRequestHeader("Accept", "application/json");
      bar.hidden = false;
      fill.style.width = "0%";
      text.textContent = "0% of " + file.name;
      zone.classList.add("busy");
      xhr.upload.addEventListener("progress", (ev) => {
        if (!ev.lengthComputable) return;
        const pct = (100 * ev.loaded) / ev.total;
        fill.style.width = pct.toFixed(1) + "%";
        text.textContent = pct.toFixed(0) + "% of " + file.name;
      });
      xhr.addEventListener("load", () => {
        zone.classList.remove("busy");
        let data = null;
        try { data = JSON.parse(xhr.responseText); } catch (err) { data = null; }
        if (xhr.status === 201 && data) {
          fill.style.width = "100%";
          text.textContent = "Uploaded " + data.name + " (" + data.n_rows + " rows).";
          if ((data.read_options || {}).warnings) location.href = "/datasets/" + data.id;  // show the warning
          else location.reload();
        } else {
          bar.hidden = true;
          showMessage("Upload failed: " + errorText(xhr.status, data));
        }
      });
      xhr.addEventListener("error", () => {
        zone.classList.remove("busy");
        bar.hidden = true;
        showMessage("Upload failed: the server cannot be reached.");
      });
      xhr.send(form);
    }

    input.addEventListener("change", () => upload(input.files[0]));
    ["dragenter", "dragover"].forEach((t) => zone.addEventListener(t, (ev) => {
      ev.preventDefault();
      zone.classList.add("over");
    }));
    ["dragleave", "drop"].forEach((t) => zone.addEventListener(t, () => zone.classList.remove("over")));
    zone.addEventListener("drop", (ev) => {
      ev.preventDefault();
      const file = ev.dataTransfer && ev.dataTransfer.files[0];
      upload(file);
    });
  }

  /* ------------------------------------------------------------ API errors next to their fields */

  function clearErrors(form) {
    $$(".field-error", form).forEach((n) => n.remove());
    $$(".invalid", form).forEach((n) => n.classList.remove("invalid"));
    $("#form-error", form).hidden = true;
  }

  /* The element for an error's loc: the longest matching data-loc prefix; a field named in the
   * message ("invalid param 'eta'", "field 'interval'") narrows "solver.params" / "constraints.i" to it. */
  function fieldFor(form, loc, msg) {
    const parts = (loc || []).filter((p, i) => !(i === 0 && p === "body")).map(String);
    const named = /(?:param|field) '([^'.]+)'/.exec(msg || "");
    if (named) parts.push(named[1]);
    for (let n = parts.length; n > 0; n--) {
      const node = form.querySelector('[data-loc="' + parts.slice(0, n).join(".") + '"]');
      if (node) return node;
    }
    return null;
  }

  /* A failed submit: 422 items go next to their fields, anything else above the form. */
  function showSubmitError(form, res) {
    const formError = $("#form-error", form);
    if (!(res.status === 422 && res.data && Array.isArray(res.data.detail))) {
      formError.textContent = errorText(res.status, res.data);
      formError.hidden = false;
      formError.scrollIntoView({ block: "center" });
      return;
    }
    const unplaced = [];
    let first = null;
    for (const d of res.data.detail) {
      const msg = String(d.msg || "invalid").replace(/^Value error, /, "");
      const node = fieldFor(form, d.loc, msg);
      if (!node) { unplaced.push(locText(d.loc) + ": " + msg); continue; }
      node.classList.add("invalid");
      node.append(el("p", { class: "field-error", role: "alert", text: msg }));
      first = first || node;
    }
    if (unplaced.length) {
      formError.textContent = unplaced.join("; ");
      formError.hidden = false;
      first = first || formError;
    }
    if (first) first.scrollIntoView({ block: "center" });
  }

  /* One row of a list builder (constraints of a job, metrics of an audit): a type chosen from a
   * catalogue, its bound (tolerance / threshold), and the fields of the type's JSON schema. */
  function typedRow(o) {
    const reindex = () => reindexRows(o.box, "." + o.rowClass, o.prefix);
    const loc = (name) => o.prefix + ".0." + name;
    const row = el("div", { class: o.rowClass + " card inner", "data-loc": o.prefix + ".0" });
    const typeSel = el("select", { class: o.typeClass });
    for (const entry of o.catalogue) typeSel.append(el("option", { value: entry.type, text: entry.type }));
    typeSel.value = o.type;
    const boundId = o.bound.cls + "-" + Math.random().toString(36).slice(2, 8);
    const bound = el("input", { id: boundId, class: o.bound.cls, type: "number", step: "any",
                                value: o.bound.value === undefined || o.bound.value === null ? "" : String(o.bound.value) });
    const boundHelp = el("small", { class: "help" });
    const desc = el("p", { class: "help" });
    const fields = el("div", { class: "row" });
    const advanced = el("details", {}, el("summary", { text: "More options" }));
    const remove = el("button", { type: "button", class: "secondary remove", text: "Remove" });
    remove.addEventListener("click", () => { row.remove(); reindex(); });
    row.append(el("div", { class: "row" },
                  el("div", { class: "field", "data-loc": loc("type") }, el("label", { text: o.typeLabel }), typeSel),
                  el("div", { class: "field", "data-loc": loc(o.bound.name) },
                     el("label", { for: boundId, text: o.bound.label }), bound, boundHelp),
                  remove),
               desc, fields, advanced);
    function onType() {
      const entry = o.catalogue.find((x) => x.type === typeSel.value) || {};
      desc.textContent = entry.description || "";
      boundHelp.textContent = o.bound.help(entry);
      const schema = o.schemaOf(entry) || {};
      const required = schema.required || [];
      const main = [];
      const more = [];
      for (const [name, prop] of Object.entries(schema.properties || {})) {
        const field = schemaField(name, prop, loc(name), required.includes(name) || prop.default === undefined);
        (o.upFront(name, prop) ? main : more).push(field);
      }
      fields.replaceChildren(...main);
      advanced.replaceChildren(el("summary", { text: "More options" }), ...more);
      advanced.hidden = more.length === 0;
      reindex();
    }
    typeSel.addEventListener("change", onType);
    o.box.append(row);
    onType();
  }

  /* A form that POSTs ``build()`` as JSON and opens ``page + id`` of what it created. */
  function submitsTo(form, button, url, build, page) {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      clearErrors(form);
      button.disabled = true;
      const res = await api("POST", url, build());
      button.disabled = false;
      if (res.ok) location.href = page + encodeURIComponent(res.data.id);
      else showSubmitError(form, res);
    });
    form.dataset.ready = "true";
  }

  /* ------------------------------------------------------------ new job form */

  /* One input generated from a JSON schema property: its kind, nullability and default drive it. */
  function schemaField(name, prop, loc, required) {
    const subs = prop.anyOf || prop.oneOf || [prop];
    const nullable = subs.some((s) => s.type === "null");
    const main = subs.find((s) => s.type !== "null") || {};
    const enumValues = prop.enum || main.enum;
    const type = prop.type || main.type;
    const id = "p-" + loc.replace(/\./g, "-");
    let kind;
    let input;
    const def = prop.default;
    if (prop.const !== undefined || main.const !== undefined) {
      kind = "const";
      input = el("input", { id: id, value: String(prop.const !== undefined ? prop.const : main.const), disabled: true });
    } else if (enumValues) {
      kind = "enum";
      input = el("select", { id: id });
      if (nullable || def === undefined) input.append(el("option", { value: "", text: nullable ? "(none)" : "" }));
      for (const v of enumValues) input.append(el("option", { value: String(v), text: String(v) }));
      input.value = def === undefined || def === null ? "" : String(def);
    } else if (type === "boolean") {
      kind = "boolean";
      input = el("input", { id: id, type: "checkbox", checked: !!def });
    } else if (type === "integer" || type === "number") {
      kind = type;
      input = el("input", { id: id, type: "number", step: type === "integer" ? "1" : "any" });
      input.value = def === undefined || def === null ? "" : String(def);
    } else if (type === "string") {
      kind = "string";
      input = el("input", { id: id, type: "text" });
      input.value = def === undefined || def === null ? "" : def;
    } else {
      kind = "json";
      input = el("input", { id: id, type: "text", placeholder: "JSON value" });
      input.value = def === undefined || def === null ? "" : JSON.stringify(def);
    }
    input.dataset.kind = kind;
    input.dataset.name = name;
    input.dataset.nullable = nullable ? "1" : "";
    input.dataset.required = required ? "1" : "";
    if (def !== undefined) input.dataset.default = JSON.stringify(def);
    const label = el("label", { for: id, text: (prop.title || name) + (required ? " *" : "") });
    const field = el("div", { class: "field", "data-loc": loc, "data-name": name }, label);
    if (kind === "boolean") {
      field.replaceChildren(el("label", { for: id }, input, " " + (prop.title || name)));
    } else {
      field.append(input);
    }
    if (prop.description) field.append(el("small", { class: "help", text: prop.description }));
    return field;
  }

  /* {set, value} of a generated input: unchanged defaults are left out of the request. */
  function readSchemaInput(input) {
    const kind = input.dataset.kind;
    const raw = kind === "boolean" ? input.checked : input.value.trim();
    let value;
    if (kind === "const") return { set: false };
    if (kind === "boolean") value = raw;
    else if (raw === "") {
      if (input.dataset.nullable && input.dataset.default !== undefined && input.dataset.default !== "null") {
        value = null;
      } else {
        return { set: false };
      }
    } else if (kind === "integer" || kind === "number") {
      const n = Number(raw);
      value = Number.isFinite(n) ? n : raw;  // the API names what is wrong
    } else if (kind === "json") {
      try { value = JSON.parse(raw); } catch (err) { value = raw; }
    } else value = raw;
    if (input.dataset.default !== undefined && JSON.stringify(value) === input.dataset.default) {
      return { set: false };
    }
    return { set: true, value: value };
  }

  /* Rows of a list builder keep data-loc "<prefix>.<i>..." in step with their position. */
  function reindexRows(box, rowSelector, prefix) {
    const pattern = new RegExp("^" + prefix + "\\.\\d+");
    $$(rowSelector, box).forEach((row, i) => {
      row.dataset.loc = prefix + "." + i;
      $$("[data-loc]", row).forEach((f) => { f.dataset.loc = f.dataset.loc.replace(pattern, prefix + "." + i); });
    });
  }

  function num(input) {
    const raw = input.value.trim();
    if (raw === "") return undefined;
    const n = Number(raw);
    return Number.isFinite(n) ? n : raw;
  }

  function parseJSON(id) {
    const node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  async function initJobForm() {
    const form = $("#job-form");
    if (!form) return;
    const datasets = parseJSON("datasets-data") || [];
    const specForm = parseJSON("spec-form-data") || {};
    const [solversRes, constraintsRes] = await Promise.all([api("GET", "/api/v1/solvers"),
                                                           api("GET", "/api/v1/constraints")]);
    if (!solversRes.ok || !constraintsRes.ok) {
      showMessage("The solver catalogue could not be loaded: " +
                  errorText((solversRes.ok ? constraintsRes : solversRes).status,
                            (solversRes.ok ? constraintsRes : solversRes).data));
      return;
    }
    const solvers = solversRes.data;
    const families = constraintsRes.data;
    const datasetSel = $("#f-dataset");
    const targetSel = $("#f-target");
    const positive = $("#f-positive");
    const sensitiveBox = $("#f-sensitive");
    const solverSel = $("#f-solver");
    const paramsBox = $("#solver-params");
    const constraintsBox = $("#constraints");

    // plain fields from the spec's own schema (defaults filled in)
    function fillEnum(select, prop) {
      for (const v of prop.enum || []) select.append(el("option", { value: v, text: v }));
      if (prop.default !== undefined) select.value = prop.default;
    }
    fillEnum($("#f-objective"), specForm.objective || {});
    fillEnum($("#f-device"), specForm.device || {});
    $("#f-max-iterations").value = (specForm.max_iterations || {}).default ?? 2000;
    $("#f-time-limit").value = (specForm.time_limit_s || {}).default ?? 600;
    $("#f-seed").value = (specForm.seed || {}).default ?? 0;
    const splitProps = (specForm.split || {}).properties || {};
    $("#f-split-test").value = (splitProps.test || {}).default ?? 0.2;
    $("#f-split-validation").value = (splitProps.validation || {}).default ?? 0.2;
    $("#f-split-seed").value = (splitProps.seed || {}).default ?? 0;

    const modelType = $("#f-model-type");
    const toggleMlp = () => {
      $$("[data-mlp]").forEach((f) => { f.hidden = modelType.value !== "mlp"; });
      $$("[data-gbdt]").forEach((f) => { f.hidden = modelType.value !== "gbdt"; });
    };
    modelType.addEventListener("change", toggleMlp);
    toggleMlp();

    // dataset → columns, label values
    const summaries = new Map();
    async function labelValues(datasetId, column) {
      if (!summaries.has(datasetId)) {
        const res = await api("GET", "/api/v1/datasets/" + encodeURIComponent(datasetId));
        summaries.set(datasetId, res.ok ? res.data.summary || {} : {});
      }
      /* A text column's values, most frequent first (by count: a JSONB summary does not keep the keys' order);
         a numeric one's distinct values from the schema, ascending (0, 1). */
      const s = summaries.get(datasetId)[column] || {};
      if (s.top) return Object.entries(s.top).sort((a, b) => b[1] - a[1]).map(([v]) => v);
      const ds = datasets.find((d) => d.id === datasetId);
      const col = ds ? ds.columns.find((c) => c.name === column) : null;
      return col && Array.isArray(col.values) ? col.values.slice().sort((a, b) => a - b).map(String) : [];
    }
    async function onTarget() {
      const values = await labelValues(datasetSel.value, targetSel.value);
      const list = $("#f-positive-values");
      list.replaceChildren(...values.map((v) => el("option", { value: v })));
      if (!positive.value || !values.includes(positive.value)) {
        // the rarer class of a text target (">50K"), the larger value of a numeric one (1)
        positive.value = values.length ? values[values.length - 1] : "";
      }
      onScreen();
    }

    // feature picker: the service's screen of the columns for this target (GET .../feature-screen)
    const featureBox = $("#f-features");
    let screenTouched = false;
    let screenRequest = 0;
    featureBox.addEventListener("change", () => { screenTouched = true; });
    async function onScreen() {
      const ds = datasets.find((d) => d.id === datasetSel.value);
      if (!ds || !targetSel.value) return;
      const request = ++screenRequest;
      featureBox.dataset.state = "loading";
      const params = new URLSearchParams({ target: targetSel.value, positive_label: positive.value });
      for (const c of $$("input[name=sensitive]:checked", sensitiveBox)) params.append("sensitive", c.value);
      const res = await api("GET", "/api/v1/datasets/" + encodeURIComponent(ds.id) + "/feature-screen?" + params);
      if (request !== screenRequest) return;  // a newer target or dataset was chosen meanwhile
      const columns = ds.columns.map((c) => c.name).filter((c) => c !== targetSel.value);
      const notes = new Map((res.ok ? res.data.notes : []).map((n) => [n.column, n]));
      const kept = new Set(res.ok ? res.data.kept : columns);
      featureBox.replaceChildren(...columns.map((name, i) => {
        const note = notes.get(name);
        return el("div", { class: "feature" + (note ? " " + note.action : ""), "data-column": name },
          el("label", { class: "check" }, el("input", { type: "checkbox", name: "feature", value: name,
                                                         id: "f-feature-" + i, checked: kept.has(name) }), " " + name),
          note ? el("small", { class: "warning", "data-reason": note.reason,
                               text: (note.action === "excluded" ? "left out — " : "check — ") +
                                     note.reason.replace("_", " ") + ": " + note.detail }) : null);
      }));
      if (!res.ok) featureBox.append(el("small", { class: "help", text: "The screen is not available: " +
                                                                        errorText(res.status, res.data) }));
      screenTouched = false;
      featureBox.dataset.state = res.ok ? "ready" : "error";
    }
    positive.addEventListener("change", onScreen);
    sensitiveBox.addEventListener("change", onScreen);
    function onDataset() {
      const ds = datasets.find((d) => d.id === datasetSel.value);
      const cols = ds ? ds.columns : [];
      targetSel.replaceChildren(...cols.map((c) => el("option", { value: c.name, text: c.name })));
      const likely = ["label", "target", "income", "y", "outcome", "class"];
      const binary = cols.filter((c) => c.n_distinct === 2);
      const guess = cols.find((c) => likely.includes(c.name.toLowerCase())) || binary[binary.length - 1] || cols[cols.length - 1];
      if (guess) targetSel.value = guess.name;
      fillSensitive(cols);
      positive.value = "";
      onTarget();
    }
    /* Sensitive columns: every column but the target. Ticked: the user's last choice where this dataset has those
       columns (remembered in the browser), else the usual attribute with the fewest groups (sex before race: big
       groups give a model and a test verdict in seconds; several small ones need far more data and time). */
    const SENSITIVE_KEY = "fairsolve.sensitive";
    function fillSensitive(cols) {
      const names = cols.map((c) => c.name).filter((n) => n !== targetSel.value);
      let chosen = [];
      try { chosen = JSON.parse(localStorage.getItem(SENSITIVE_KEY) || "[]"); } catch (err) { chosen = []; }
      chosen = Array.isArray(chosen) ? chosen.filter((n) => names.includes(n)) : [];
      if (!chosen.length) {
        const usual = ["sex", "gender", "race", "ethnicity"];
        const candidates = cols.filter((c) => names.includes(c.name) && usual.includes(c.name.toLowerCase()) &&
                                              (c.n_distinct || 0) >= 2);
        candidates.sort((a, b) => (a.n_distinct - b.n_distinct) ||
                                  usual.indexOf(a.name.toLowerCase()) - usual.indexOf(b.name.toLowerCase()));
        chosen = candidates.length ? [candidates[0].name] : [];
      }
      sensitiveBox.replaceChildren(...names.map((name, i) => el("label", { class: "check" },
        el("input", { type: "checkbox", value: name, name: "sensitive", id: "f-sensitive-" + i,
                      checked: chosen.includes(name) }), " " + name)));
    }
    sensitiveBox.addEventListener("change", () => {
      const picked = $$("input[name=sensitive]:checked", sensitiveBox).map((c) => c.value);
      try { localStorage.setItem(SENSITIVE_KEY, JSON.stringify(picked)); } catch (err) { /* storage off */ }
    });
    datasetSel.addEventListener("change", onDataset);
    targetSel.addEventListener("change", () => {
      const ds = datasets.find((d) => d.id === datasetSel.value);
      fillSensitive(ds ? ds.columns : []);
      positive.value = "";
      onTarget();
    });
    onDataset();

    // solver → its config fields
    for (const s of solvers) solverSel.append(el("option", { value: s.name, text: s.name }));
    // auto (a portfolio that keeps the tolerance on validation) is the default; named solvers keep paper defaults
    solverSel.value = ["auto", "plada"].find((n) => solvers.some((s) => s.name === n)) || solvers[0].name;
    function onSolver() {
      const s = solvers.find((x) => x.name === solverSel.value);
      const supports = s.supports || {};
      $("#solver-description").textContent = (s.description || "") +
        (supports.models ? " Models: " + supports.models.join(", ") + "." : "") +
        (supports.constraints ? " Constraints: " + supports.constraints.join(", ") + "." : "");
      const schema = s.config_schema || {};
      const required = schema.required || [];
      paramsBox.replaceChildren(...Object.entries(schema.properties || {}).map(([name, prop]) =>
        schemaField(name, prop, "solver.params." + name, required.includes(name))));
      if (!paramsBox.children.length) paramsBox.append(el("p", { class: "help", text: "This solver has no settings." }));
    }
    solverSel.addEventListener("change", onSolver);
    onSolver();

    // constraint builder
    const addConstraint = (type, tolerance) => typedRow({
      box: constraintsBox, prefix: "constraints", rowClass: "constraint", typeClass: "c-type", typeLabel: "Type",
      catalogue: families, type: type || "demographic_parity", schemaOf: (f) => f.config_schema,
      // fields without a default (interval) and the AUC variant up front; the rest under "More options"
      upFront: (name, prop) => prop.default === undefined || name === "variant" || name === "interval",
      bound: { name: "tolerance", cls: "c-tolerance", label: "Tolerance", value: tolerance ?? 0.05,
               help: () => "Largest allowed unfairness ε (≥ 0)." },
    });
    $("#add-constraint").addEventListener("click", () => addConstraint());
    addConstraint("demographic_parity", 0.05);

    function buildSpec() {
      const sensitive = $$("input[name=sensitive]:checked", sensitiveBox).map((c) => c.value);
      const spec = {
        dataset_id: datasetSel.value,
        target: targetSel.value,
        positive_label: positive.value,
        binarize: $("#f-binarize").checked,
        sensitive: sensitive,
        objective: $("#f-objective").value,
        model: { type: modelType.value },
        solver: { name: solverSel.value, params: {} },
        constraints: [],
        split: { test: num($("#f-split-test")), validation: num($("#f-split-validation")), seed: num($("#f-split-seed")) },
        seed: num($("#f-seed")),
        max_iterations: num($("#f-max-iterations")),
        time_limit_s: num($("#f-time-limit")),
        device: $("#f-device").value,
      };
      if (modelType.value === "mlp") {
        spec.model.hidden = $("#f-model-hidden").value.split(",").map((s) => s.trim()).filter(Boolean).map(Number);
        spec.model.activation = $("#f-model-activation").value;
      }
      if (modelType.value === "gbdt") {
        spec.model.n_estimators = num($("#f-model-trees"));
        spec.model.num_leaves = num($("#f-model-leaves"));
        spec.model.learning_rate = num($("#f-model-lr"));
      }
      if ($("#f-exclude-sensitive").checked || screenTouched) {  // untouched: features null, screened by the service
        const ds = datasets.find((d) => d.id === datasetSel.value);
        const picked = featureBox.dataset.state === "ready"
          ? $$("input[name=feature]:checked", featureBox).map((c) => c.value)
          : ds.columns.map((c) => c.name).filter((c) => c !== spec.target);
        spec.features = $("#f-exclude-sensitive").checked ? picked.filter((c) => !sensitive.includes(c)) : picked;
      }
      for (const input of $$("[data-kind]", paramsBox)) {
        const r = readSchemaInput(input);
        if (r.set) spec.solver.params[input.dataset.name] = r.value;
      }
      for (const row of $$(".constraint", constraintsBox)) {
        const c = { type: $(".c-type", row).value, tolerance: num($(".c-tolerance", row)) };
        for (const input of $$("[data-kind]", row)) {
          const r = readSchemaInput(input);
          if (r.set) c[input.dataset.name] = r.value;
        }
        spec.constraints.push(c);
      }
      const guarantee = $("#f-guarantee");  // shown when the spec has a guarantee field
      if (guarantee && guarantee.checked) spec.guarantee = { confidence: num($("#f-guarantee-confidence")) };
      for (const k of Object.keys(spec.split)) if (spec.split[k] === undefined) delete spec.split[k];
      for (const k of ["seed", "max_iterations", "time_limit_s"]) if (spec[k] === undefined) delete spec[k];
      return spec;
    }

    // before training: can the guarantee be certified at this dataset's size? (its stored counts, 422-free)
    const check = $("#guarantee-check");
    let checking = 0;
    async function checkGuarantee() {
      const box = $("#f-guarantee");
      if (!check || !box) return;
      const hide = () => { checking++; check.hidden = true; check.dataset.state = "idle"; };
      if (!box.checked) return hide();
      const spec = buildSpec();
      if (!spec.dataset_id || !spec.target || !spec.positive_label || spec.sensitive.length !== 1 ||
          !spec.constraints.length) return hide();
      const q = new URLSearchParams({ target: spec.target, positive_label: spec.positive_label,
                                      sensitive: spec.sensitive[0], confidence: String(spec.guarantee.confidence) });
      for (const c of spec.constraints) q.append("constraint", c.type + ":" + c.tolerance);
      if (spec.split.test !== undefined) q.set("test", String(spec.split.test));
      if (spec.split.validation !== undefined) q.set("validation", String(spec.split.validation));
      const mine = ++checking;
      check.dataset.state = "loading";
      const res = await api("GET", "/api/v1/datasets/" + encodeURIComponent(spec.dataset_id) + "/guarantee-check?" + q);
      if (mine !== checking) return;  // a newer check is on its way
      check.hidden = false;
      if (!res.ok || !res.data.available) {
        check.className = "message warning";
        check.dataset.certifiable = "unknown";
        check.textContent = res.ok ? "Whether the guarantee can be certified is not known before the job runs: " +
          res.data.reason + "." : "The guarantee check failed: " + errorText(res.status, res.data);
      } else {
        check.className = "message " + (res.data.certifiable ? "info" : "warning");
        check.dataset.certifiable = String(res.data.certifiable);
        check.dataset.rowsNeeded = res.data.rows_needed === null ? "" : String(res.data.rows_needed);
        check.textContent = res.data.sentence;
      }
      check.dataset.state = "ready";
    }
    form.addEventListener("change", checkGuarantee);
    form.addEventListener("input", (e) => { if (e.target.matches(".c-tolerance, #f-guarantee-confidence")) checkGuarantee(); });

    submitsTo(form, $("#submit-job"), "/api/v1/jobs", buildSpec, "/jobs/");
  }

  /* ------------------------------------------------------------ audits */

  async function initAuditForm() {
    const form = $("#audit-form");
    if (!form) return;
    const res = await api("GET", "/api/v1/audits/metrics");
    if (!res.ok) {
      showMessage("The metric catalogue could not be loaded: " + errorText(res.status, res.data));
      return;
    }
    const catalogue = res.data;
    const box = $("#metrics");
    const jobSel = $("#a-job");
    const dsSel = $("#a-dataset");
    const syncDataset = () => {
      const opt = jobSel.selectedOptions[0];
      if (opt && !dsSel.dataset.touched) dsSel.value = opt.dataset.dataset || "";
    };
    jobSel.addEventListener("change", syncDataset);
    dsSel.addEventListener("change", () => { dsSel.dataset.touched = "1"; });
    syncDataset();
    const isLog = () => $("#a-kind-log").checked;
    const isUploaded = () => $("#a-kind-model").checked;
    const syncKind = () => {
      $("#job-field").hidden = isLog() || isUploaded();
      $("#model-field").hidden = !isUploaded();
      $("#log-fields").hidden = !isLog();
    };
    for (const radio of $$('input[name="a-kind"]', form)) radio.addEventListener("change", syncKind);
    syncKind();

    /* A prediction log's columns (POST /api/v1/audits' ``predictions``). */
    function buildLog(text) {
      const kind = $("#p-output-kind").value;
      const output = text("#p-output");
      const log = { label_column: text("#p-label"),
                    sensitive: ($("#p-sensitive").value || "").split(",").map((c) => c.trim()).filter(Boolean) };
      if (kind === "decision") log.prediction_column = output;
      else {
        log.score_column = output;
        log.score_scale = kind;
        const t = num($("#p-threshold"));
        if (t !== undefined) log.threshold = t;
      }
      const positive = text("#p-positive");
      if (positive !== null) log.positive_label = positive;
      return log;
    }

    const addMetric = (type, threshold) => typedRow({
      box: box, prefix: "metrics", rowClass: "metric", typeClass: "m-type", typeLabel: "Metric",
      catalogue: catalogue, type: type || catalogue[0].type, schemaOf: (m) => m.options_schema,
      upFront: () => true,
      bound: { name: "threshold", cls: "m-threshold", label: "Threshold", value: threshold,
               help: (m) => (m.direction === "min" ? "Lower bound: a value below it is a breach."
                                                   : "Upper bound: a value above it is a breach.") +
                            " Empty: reported, never breached." },
    });
    $("#add-metric").addEventListener("click", () => addMetric());
    addMetric("demographic_parity", 0.1);

    function buildAudit() {
      const text = (id) => { const v = $(id).value.trim(); return v === "" ? null : v; };
      const body = { dataset_id: dsSel.value || null, source: text("#a-source"),
                     schedule: text("#a-schedule"), webhook_url: text("#a-webhook"),
                     enabled: $("#a-enabled").checked, metrics: [] };
      if (isLog()) body.predictions = buildLog(text);
      else if (isUploaded()) body.model_artifact_id = $("#a-model").value;
      else body.job_id = jobSel.value;
      const name = text("#a-name");
      if (name !== null) body.name = name;
      for (const row of $$(".metric", box)) {
        const m = { type: $(".m-type", row).value };
        const t = num($(".m-threshold", row));
        if (t !== undefined) m.threshold = t;
        for (const input of $$("[data-kind]", row)) {
          const r = readSchemaInput(input);
          if (r.set) m[input.dataset.name] = r.value;
        }
        body.metrics.push(m);
      }
      return body;
    }

    submitsTo(form, $("#submit-audit"), "/api/v1/audits", buildAudit, "/audits/");
  }

  function initAuditPage() {
    renderCharts();
    const box = $("#audit");
    if (!box) return;
    const auditId = encodeURIComponent(box.dataset.auditId);
    const button = $("#run-audit");
    const state = $("#run-state");
    /* Poll the runs until ``runId`` (or every run, when null) has finished, then show the new report. */
    async function waitRuns(runId) {
      const res = await api("GET", "/api/v1/audits/" + auditId + "/runs?limit=20");
      if (res.ok && Array.isArray(res.data)) {
        const pending = res.data.filter((r) => (runId === null || r.id === runId) &&
                                              ["queued", "running"].includes(r.status));
        const known = runId === null || res.data.some((r) => r.id === runId);
        if (known && pending.length === 0) { location.reload(); return; }
        state.textContent = pending.length ? "run " + pending[0].status + "…" : "run queued…";
      }
      setTimeout(() => waitRuns(runId), POLL_MS);
    }
    button.addEventListener("click", async () => {
      button.disabled = true;
      const res = await api("POST", "/api/v1/audits/" + auditId + "/run");
      if (res.ok) {
        state.textContent = "run queued…";
        waitRuns(res.data.id);
      } else {
        button.disabled = false;
        showMessage(errorText(res.status, res.data));
      }
    });
    if (box.dataset.active === "true") setTimeout(() => waitRuns(null), POLL_MS);
    const pin = $("#pin-baseline");
    if (pin) pin.addEventListener("click", async () => {  /* score drift against this run from now on */
      pin.disabled = true;
      const res = await api("PUT", "/api/v1/audits/" + auditId + "/baseline", { run_id: pin.dataset.runId });
      if (res.ok) location.reload();
      else { pin.disabled = false; showMessage(errorText(res.status, res.data)); }
    });
  }

  /* ------------------------------------------------------------ dataset page */

  function initDatasetPage() {
    const form = $("#rename-form");  /* shown while the upload's column names were generated or renamed */
    if (!form) return;
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const names = $("#rename-columns").value.split(",").map((n) => n.trim());
      const button = $("#rename-submit");
      button.disabled = true;
      const res = await api("PUT", "/api/v1/datasets/" + encodeURIComponent(form.dataset.datasetId) + "/column-names",
                            { column_names: names });
      if (res.ok) { location.reload(); return; }
      button.disabled = false;
      showMessage(errorText(res.status, res.data));
    });
  }

  /* ------------------------------------------------------------ start */

  const pages = {
    jobs: initJobsList,
    job: initJobPage,
    datasets: initDatasets,
    dataset: initDatasetPage,
    "job-new": () => initJobForm().catch(() => showMessage("The form could not be built.")),
    sweep: initSweepPage,
    audit: initAuditPage,
    "audit-new": () => initAuditForm().catch(() => showMessage("The form could not be built.")),
  };
  const init = pages[document.body.dataset.page];
  if (init) init();
  window.FairSolve = { api: api, showMessage: showMessage, errorText: errorText, renderCharts: renderCharts };
})();
