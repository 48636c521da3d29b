// End-to-end check of the gtc backend from a real browser. It makes the calls of the curator
// web frontend the way the frontend makes them: fetch on the same origin, Content-Type:
// application/json on every request (GETs too), X-User-Id of a dev user on every call but
// GET /v1/config, If-Match with the raw _etag, and one re-read-and-retry after a 412.
//
// Each step adds {name, ok, detail} to the report; a step that throws fails with the message.
// Steps whose route is not served yet fail with the status they got, so the report says
// exactly which call is missing. At the end the report goes into <pre id="report"> as JSON
// and the title becomes "done".
"use strict";

const USER = "e2e-curator@example.com";
const DS = "e2e-support";
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const report = [];
const seenErrors = []; // every response ≥ 400 of the run, for the error-body step
const wrongTypes = []; // JSON answers of /v1 that were not application/json

class Skip extends Error {}

async function step(name, fn) {
  try {
    const detail = await fn();
    report.push({ name, ok: true, detail: detail === undefined ? "" : String(detail) });
  } catch (e) {
    if (e instanceof Skip) {
      report.push({ name, ok: true, detail: "skipped: " + e.message });
    } else {
      report.push({ name, ok: false, detail: e && e.message ? e.message : String(e) });
    }
  }
}

function fail(msg) {
  throw new Error(msg);
}

function check(cond, msg) {
  if (!cond) fail(msg);
}

function short(text) {
  return text.length > 400 ? text.slice(0, 400) + "…" : text;
}

// call makes one request the way the frontend does and returns {status, headers, text, json}.
async function call(method, path, opts = {}) {
  const headers = { "Content-Type": "application/json" };
  if (opts.user !== null) headers["X-User-Id"] = opts.user || USER;
  if (opts.roles !== undefined) headers["X-User-Roles"] = opts.roles;
  if (opts.ifMatch !== undefined) headers["If-Match"] = opts.ifMatch;
  let body;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) body = JSON.stringify(opts.body);
  const res = await fetch(path, { method, headers, body, cache: "no-store" });
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch (e) {
    json = undefined;
  }
  const r = { method, path, status: res.status, headers: res.headers, text, json };
  const ctype = res.headers.get("Content-Type") || "";
  if (res.status >= 400) seenErrors.push(r);
  else if (path.startsWith("/v1/") && json !== undefined && ctype !== "application/json" &&
           !res.headers.get("Content-Disposition")) {
    wrongTypes.push(`${method} ${path} → ${res.status} Content-Type ${ctype || "(none)"}`);
  }
  return r;
}

// want throws unless the response has one of the statuses.
function want(r, ...statuses) {
  if (!statuses.includes(r.status)) {
    fail(`${r.method} ${r.path} → ${r.status}, want ${statuses.join(" or ")}: ${short(r.text)}`);
  }
  return r;
}

function notServed(r) {
  return r.status === 404 && r.json && r.json.code === "ROUTE_NOT_FOUND" || r.status === 405;
}

function itemPath(it, kind = "ground-truths") {
  return `/v1/${kind}/${encodeURIComponent(it.datasetName)}/${encodeURIComponent(it.bucket)}/${encodeURIComponent(it.id)}`;
}

function keys(o) {
  return Object.keys(o).sort().join(",");
}

function same(a, b) {
  return JSON.stringify(canon(a)) === JSON.stringify(canon(b));
}

function canon(v) {
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === "object") {
    const out = {};
    for (const k of Object.keys(v).sort()) out[k] = canon(v[k]);
    return out;
  }
  return v;
}

// checkItem checks the item fields the frontend relies on.
function checkItem(it, where) {
  check(it && typeof it === "object", `${where}: not an object`);
  check(typeof it.id === "string" && it.id !== "", `${where}: id missing`);
  check(typeof it.datasetName === "string", `${where}: datasetName missing`);
  check(typeof it.bucket === "string" && UUID_RE.test(it.bucket), `${where}: bucket ${JSON.stringify(it.bucket)} is not a UUID`);
  check(typeof it._etag === "string" && it._etag !== "", `${where}: _etag missing`);
  check(typeof it.status === "string", `${where}: status missing`);
  check(Array.isArray(it.history), `${where}: history is not an array`);
  for (const h of it.history) {
    check(typeof h.role === "string" && typeof h.msg === "string", `${where}: history entry ${JSON.stringify(h)} lacks role/msg`);
  }
}

// The full patch body of the curate pane.
function fullPatch(status, extra = {}) {
  return Object.assign({
    status,
    manualTags: ["source:sme", "topic:install"],
    comment: null,
    history: [
      { role: "user", msg: "Where do I download the installer?", turnId: "t1", stepId: "s1", expectedBehavior: ["names the download page"] },
      { role: "assistant", msg: "Use the download page.", turnId: "t2", stepId: "s2" },
    ],
    contextEntries: [{ key: "product", value: { name: "desktop", version: 3 } }],
    toolCalls: [{ id: "call-1", name: "search", callType: "tool", arguments: { q: "installer" }, agent: "planner",
                  stepNumber: 1, parallelGroup: null, parentCallId: null, response: { hits: 1 } }],
    expectedTools: { required: [{ name: "search", arguments: null }], optional: [], notNeeded: [] },
    feedback: [{ source: "e2e", values: { rating: 5 } }],
    metadata: { origin: "browser", nested: { a: [1, 2] } },
    traceIds: { trace: "tr-1" },
    tracePayload: { spans: [{ name: "root" }] },
    plugins: { "rag-compat": { kind: "rag-compat", version: "1.0", data: { references: [REF_EXTRAS] } } },
  }, extra);
}

const REF_EXTRAS = {
  url: "https://docs.example.com/install", title: "Install", content: "Run the installer.", bonus: false,
  visitedAt: "2025-01-02T10:01:00.000Z", keyParagraph: "Run the installer.", id: "ref-1", turnId: "t2",
  toolCallId: "call-1", snippet: "Run the…",
};

// putWithRetry is the frontend's save: PUT with If-Match; after a 412 it reads the item,
// takes its _etag and repeats the PUT once.
async function putWithRetry(kind, it, etag, body) {
  const first = await call("PUT", itemPath(it, kind), { ifMatch: etag, body });
  if (first.status !== 412) return { first, final: first, retried: false };
  check(first.json && first.json.status === 412, `412 body lacks "status": 412: ${short(first.text)}`);
  const fresh = want(await call("GET", itemPath(it)), 200);
  const final = await call("PUT", itemPath(it, kind), { ifMatch: fresh.json._etag, body });
  return { first, final, retried: true };
}

const state = { items: [], a: null, b: null, dup: null, assignmentRoutes: true };

async function refresh(it) {
  return want(await call("GET", itemPath(it)), 200).json;
}

async function run() {
  await step("spa-fallback", async () => {
    check(location.pathname === "/curate/e2e", `page path is ${location.pathname}`);
    const page = await fetch("/some/client/route", { headers: { "X-User-Id": USER } });
    check(page.status === 200, `/some/client/route → ${page.status}`);
    check(page.headers.get("Content-Type") === "text/html; charset=utf-8", `fallback Content-Type ${page.headers.get("Content-Type")}`);
    check(page.headers.get("Cache-Control") === "no-cache", `fallback Cache-Control ${page.headers.get("Cache-Control")}`);
    check((await page.text()).includes('<pre id="report">'), "fallback is not the index");
    const js = await fetch("/app.js");
    check(js.status === 200, `/app.js → ${js.status}`);
    check(/^text\/javascript/.test(js.headers.get("Content-Type") || ""), `/app.js Content-Type ${js.headers.get("Content-Type")}`);
    check(/^public, max-age=\d+$/.test(js.headers.get("Cache-Control") || ""), `/app.js Cache-Control ${js.headers.get("Cache-Control")}`);
    check(js.headers.get("X-Content-Type-Options") === "nosniff", "/app.js without nosniff");
    const missing = await call("GET", "/assets/missing-0000.js");
    check(missing.status === 404 && missing.json && missing.json.code === "ROUTE_NOT_FOUND", `missing asset → ${missing.status} ${short(missing.text)}`);
    const api404 = await call("GET", "/v1/no-such-route");
    check(api404.status === 404 && api404.json && api404.json.code === "ROUTE_NOT_FOUND", `/v1/no-such-route → ${api404.status} ${short(api404.text)}`);
    const logout = await fetch("/.auth/logout?post_logout_redirect_uri=/");
    check(logout.status === 200 && (logout.headers.get("Content-Type") || "").startsWith("text/html"), `/.auth/logout → ${logout.status}`);
    return `served at ${location.pathname}; assets cached with ${js.headers.get("Cache-Control")}`;
  });

  await step("config without X-User-Id", async () => {
    const r = want(await call("GET", "/v1/config", { user: null }), 200);
    check(keys(r.json) === "requireKeyParagraph,requireReferenceVisit,selfServeLimit,trustedReferenceDomains", `keys ${keys(r.json)}`);
    check(typeof r.json.selfServeLimit === "number", "selfServeLimit is not a number");
    check(Array.isArray(r.json.trustedReferenceDomains), "trustedReferenceDomains is not an array");
    return `selfServeLimit ${r.json.selfServeLimit}`;
  });

  await step("import two items", async () => {
    const item = (id, msg) => ({
      id, datasetName: DS, manualTags: ["source:sme"],
      history: [{ role: "user", msg }, { role: "assistant", msg: "Use the download page." }],
      plugins: { "rag-compat": { kind: "rag-compat", version: "1.0",
        data: { references: [{ url: "https://docs.example.com/install", title: "Install", content: "Run the installer." }] } } },
    });
    const r = want(await call("POST", "/v1/ground-truths", {
      body: [item("e2e-a", "Where do I download the installer?"), item("e2e-b", "How do I install the installer?")],
    }), 200);
    check(r.json.imported === 2, `imported ${r.json.imported}: ${short(r.text)}`);
    check(same(r.json.uuids, ["e2e-a", "e2e-b"]), `uuids ${JSON.stringify(r.json.uuids)}`);
    return "imported 2";
  });

  await step("self-serve", async () => {
    const r = await call("POST", "/v1/assignments/self-serve", { body: { limit: 2 } });
    want(r, 200);
    check(typeof r.json.assignedCount === "number", `assignedCount missing: ${short(r.text)}`);
    check(Array.isArray(r.json.assigned) && typeof r.json.requested === "number", `shape ${keys(r.json)}`);
    check(r.json.assignedCount === 2 && r.json.assigned.length === 2, `assignedCount ${r.json.assignedCount}, want 2`);
    r.json.assigned.forEach((it, i) => checkItem(it, `assigned[${i}]`));
    return `assignedCount ${r.json.assignedCount}`;
  });

  await step("my assignments", async () => {
    const r = want(await call("GET", "/v1/assignments/my"), 200);
    check(Array.isArray(r.json), `not a bare array: ${short(r.text)}`);
    r.json.forEach((it, i) => checkItem(it, `my[${i}]`));
    const ids = r.json.map((it) => it.id).sort();
    check(same(ids, ["e2e-a", "e2e-b"]), `my ids ${JSON.stringify(ids)}`);
    check(r.json.every((it) => it.status === "draft" && it.assignedTo === USER), "an item is not a draft assigned to the caller");
    state.items = r.json;
    return `${r.json.length} items`;
  });

  // The later steps need the two items; without /my they are read from the explorer list.
  if (state.items.length !== 2) {
    state.assignmentRoutes = false;
    const r = await call("GET", `/v1/ground-truths?dataset=${encodeURIComponent(DS)}&sortBy=id&sortOrder=asc`);
    if (r.status === 200) state.items = r.json.items.filter((it) => it.id === "e2e-a" || it.id === "e2e-b");
  }
  state.a = state.items.find((it) => it.id === "e2e-a");
  state.b = state.items.find((it) => it.id === "e2e-b");
  const needItems = () => check(state.a && state.b, "the imported items could not be read");

  let staleEtag;
  await step("assignment PUT full patch", async () => {
    needItems();
    staleEtag = state.a._etag;
    const r = await call("PUT", itemPath(state.a, "assignments"), { ifMatch: state.a._etag, body: fullPatch("draft") });
    want(r, 200);
    const it = r.json;
    checkItem(it, "response");
    check(it._etag !== staleEtag, "the _etag did not change");
    check(r.headers.get("ETag"), "no ETag header");
    check(it.comment === "", `comment ${JSON.stringify(it.comment)}, want "" for null`);
    check(same(it.manualTags, ["source:sme", "topic:install"]), `manualTags ${JSON.stringify(it.manualTags)}`);
    check(same(it.history, fullPatch("draft").history), `history came back as ${JSON.stringify(it.history)}`);
    const refs = it.plugins && it.plugins["rag-compat"] && it.plugins["rag-compat"].data.references;
    check(Array.isArray(refs) && refs.length === 1, `references ${JSON.stringify(refs)}`);
    for (const k of ["visitedAt", "keyParagraph", "id", "turnId", "toolCallId", "snippet"]) {
      check(refs[0][k] === REF_EXTRAS[k], `reference ${k} came back as ${JSON.stringify(refs[0][k])}`);
    }
    for (const k of ["contextEntries", "toolCalls", "expectedTools", "feedback", "metadata", "traceIds", "tracePayload"]) {
      check(same(it[k], fullPatch("draft")[k]), `${k} came back as ${JSON.stringify(it[k])}`);
    }
    state.a = it;
    return `new _etag ${it._etag}`;
  });

  await step("412 then re-read and retry", async () => {
    needItems();
    check(staleEtag && staleEtag !== state.a._etag, "no stale ETag (the previous step failed)");
    const res = await putWithRetry("assignments", state.a, staleEtag, fullPatch("draft", { comment: "retried" }));
    check(res.first.status === 412, `stale PUT → ${res.first.status}, want 412: ${short(res.first.text)}`);
    check(res.first.json.code === "ETAG_MISMATCH", `412 code ${res.first.json.code}`);
    want(res.final, 200);
    check(res.final.json.comment === "retried", "the retried PUT did not apply");
    state.a = res.final.json;
    return "412 ETAG_MISMATCH, retry 200";
  });

  await step("approve", async () => {
    needItems();
    const res = await putWithRetry("assignments", state.a, state.a._etag, fullPatch("approved"));
    want(res.final, 200);
    const it = res.final.json;
    check(it.status === "approved", `status ${it.status}`);
    check(it.assignedTo === null, `assignedTo ${it.assignedTo}, want null`);
    check(typeof it.reviewedAt === "string" && it.updatedBy === USER, `reviewedAt ${it.reviewedAt}, updatedBy ${it.updatedBy}`);
    state.a = it;
    return `reviewedAt ${it.reviewedAt}`;
  });

  await step("skip", async () => {
    needItems();
    const res = await putWithRetry("assignments", state.b, state.b._etag, fullPatch("skipped"));
    want(res.final, 200);
    check(res.final.json.status === "skipped", `status ${res.final.json.status}`);
    state.b = res.final.json;
    const my = want(await call("GET", "/v1/assignments/my"), 200);
    check(Array.isArray(my.json) && !my.json.some((it) => it.id === "e2e-b"), "the skipped item is still in /my");
    return "skipped item left /my";
  });

  await step("assign then /my", async () => {
    needItems();
    const r = want(await call("POST", itemPath(state.b, "assignments") + "/assign", { body: {} }), 200);
    check(r.json.status === "draft" && r.json.assignedTo === USER, `status ${r.json.status}, assignedTo ${r.json.assignedTo}`);
    state.b = r.json;
    const my = want(await call("GET", "/v1/assignments/my"), 200);
    check(Array.isArray(my.json) && my.json.some((it) => it.id === "e2e-b" && it.status === "draft"), "the assigned item is not in /my");
    return "assigned item is in /my";
  });

  await step("duplicate", async () => {
    needItems();
    const r = want(await call("POST", itemPath(state.b, "assignments") + "/duplicate"), 201);
    checkItem(r.json, "duplicate");
    check(r.json.id !== state.b.id && r.json.datasetName === DS && r.json.bucket === state.b.bucket, `duplicate ${r.json.id} in ${r.json.datasetName}/${r.json.bucket}`);
    check(r.json.manualTags.includes("rephrase:e2e-b"), `manualTags ${JSON.stringify(r.json.manualTags)}`);
    check(r.json.assignedTo === USER, `assignedTo ${r.json.assignedTo}`);
    state.dup = r.json;
    return `new item ${r.json.id}`;
  });

  await step("delete, read, restore (explorer)", async () => {
    needItems();
    const target = state.dup || state.b;
    const del = want(await call("DELETE", itemPath(target)), 200);
    check(del.json.status === "deleted", `DELETE answered ${short(del.text)}`);
    const got = await refresh(target);
    check(got.status === "deleted", `after DELETE the item reads as ${got.status}`);
    const put = want(await call("PUT", itemPath(target), { ifMatch: got._etag, body: { status: "draft" } }), 200);
    check(put.json.status === "draft", `restored status ${put.json.status}`);
    return `${target.id} deleted and restored`;
  });

  await step("delete, restore (curate pane)", async () => {
    needItems();
    const target = state.dup || state.b;
    want(await call("DELETE", itemPath(target)), 200);
    const got = await refresh(target);
    check(got.status === "deleted" && got.assignedTo === USER, `deleted item: status ${got.status}, assignedTo ${got.assignedTo}`);
    const res = await putWithRetry("assignments", got, got._etag, fullPatch("draft"));
    want(res.final, 200);
    check(res.final.json.status === "draft", `restored status ${res.final.json.status}`);
    return `${target.id} restored through the assignment PUT`;
  });

  await step("explorer list", async () => {
    const q = new URLSearchParams([
      ["status", "draft"], ["dataset", DS], ["tags", "source:sme"], ["excludeTags", "custom:none"],
      ["itemId", "e2e"], ["keyword", "installer"], ["pluginFilter", "rag-compat:refUrl=https://docs.example.com"],
      ["sortBy", "reviewedAt"], ["sortOrder", "desc"], ["page", "1"], ["limit", "25"],
    ]);
    const r = want(await call("GET", "/v1/ground-truths?" + q), 200);
    check(Array.isArray(r.json.items), `items missing: ${short(r.text)}`);
    const p = r.json.pagination || {};
    check(keys(p) === "hasNext,hasPrev,limit,page,total,totalPages", `pagination keys ${keys(p)}`);
    check(p.total === r.json.items.length && p.total >= 1, `total ${p.total}, ${r.json.items.length} items`);
    check(r.json.items.every((it) => it.datasetName === DS && it.status === "draft" && it.id.includes("e2e")), "an item breaks the filters");
    for (const extra of ["sortBy=hasAnswer", "sortBy=tagCount", "pluginSort=rag-compat:totalReferences"]) {
      const s = want(await call("GET", `/v1/ground-truths?dataset=${encodeURIComponent(DS)}&${extra}&sortOrder=asc&page=1&limit=25`), 200);
      check(Array.isArray(s.json.items) && s.json.pagination, `${extra}: ${short(s.text)}`);
    }
    return `${p.total} matching`;
  });

  await step("stats", async () => {
    const r = want(await call("GET", "/v1/ground-truths/stats"), 200);
    check(keys(r.json) === "approved,deleted,draft", `keys ${keys(r.json)}`);
    check(Object.values(r.json).every((v) => Number.isInteger(v)), `values ${short(r.text)}`);
    return r.text;
  });

  await step("tags", async () => {
    const schema = want(await call("GET", "/v1/tags/schema"), 200);
    check(Array.isArray(schema.json.groups) && schema.json.groups.length > 0, `schema ${short(schema.text)}`);
    for (const g of schema.json.groups) {
      check(keys(g) === "depends_on,exclusive,name,values", `group keys ${keys(g)}`);
    }
    const list = want(await call("GET", "/v1/tags"), 200);
    check(Array.isArray(list.json.tags) && Array.isArray(list.json.computedTags), `GET /v1/tags ${short(list.text)}`);
    const add = want(await call("POST", "/v1/tags", { body: { tags: [" Custom : E2E "] } }), 200);
    check(Array.isArray(add.json.tags) && add.json.tags.includes("custom:e2e"), `POST /v1/tags ${short(add.text)}`);
    const def = want(await call("POST", "/v1/tags/definitions", { body: { tag_key: "custom:e2e", description: "Made by the browser test" } }), 201);
    check(def.json.tag_key === "custom:e2e" && def.json.created_by === USER, `definition ${short(def.text)}`);
    const glossary = want(await call("GET", "/v1/tags/glossary"), 200);
    const types = new Set(glossary.json.groups.map((g) => g.type));
    check([...types].every((t) => ["manual", "computed", "custom"].includes(t)), `glossary types ${[...types]}`);
    const custom = glossary.json.groups.find((g) => g.type === "custom");
    check(custom && custom.tags.some((t) => t.key === "custom:e2e" && t.description === "Made by the browser test"), "the definition is not in the glossary");
    check(glossary.json.groups.every((g) => g.tags.every((t) => "key" in t && "description" in t)), "a glossary tag lacks key/description");
    // The page runs as a curator: deleting a definition is an admin's, and the refusal says so.
    const refused = await call("DELETE", "/v1/tags/definitions/" + encodeURIComponent("custom:e2e"));
    check(refused.status === 403 && refused.json && refused.json.code === "FORBIDDEN" && /needs the admin role/.test(refused.json.detail),
      `DELETE definition as a curator → ${refused.status} ${short(refused.text)}`);
    const del = await call("DELETE", "/v1/tags/definitions/" + encodeURIComponent("custom:e2e"), { roles: "admin" });
    check(del.status === 204 && del.text === "", `DELETE definition as an admin → ${del.status} ${short(del.text)}`);
    return `${schema.json.groups.length} groups`;
  });

  await step("datasets and instructions", async () => {
    const r = want(await call("GET", "/v1/datasets"), 200);
    check(Array.isArray(r.json) && r.json.every((d) => typeof d === "string") && r.json.includes(DS), `datasets ${short(r.text)}`);
    const ci = want(await call("GET", `/v1/datasets/${encodeURIComponent(DS)}/curation-instructions`), 200, 404);
    if (ci.status === 404) {
      check(ci.json && typeof ci.json.detail === "string", `404 body ${short(ci.text)}`);
      return "no instructions (404 tolerated)";
    }
    check(typeof ci.json.instructions === "string", `instructions ${short(ci.text)}`);
    return "instructions present";
  });

  await step("search", async () => {
    const r = await call("GET", "/v1/search?q=install&top=10");
    if (notServed(r)) throw new Skip(`search not available (${r.status})`);
    want(r, 200);
    check(Array.isArray(r.json.results), `results ${short(r.text)}`);
    check(r.json.results.every((x) => typeof x.url === "string" && x.url !== ""), "a result has no url");
    return `${r.json.results.length} results`;
  });

  await step("snapshot download", async () => {
    // As the frontend's "Export JSON": a GET that saves the body under the Content-Disposition name.
    const r = await call("GET", "/v1/ground-truths/snapshot");
    want(r, 200);
    const cd = r.headers.get("Content-Disposition") || "";
    const m = /filename="([^"]+)"/.exec(cd);
    check(m, `no file name in Content-Disposition ${JSON.stringify(cd)}`);
    check(/^ground-truth-snapshot-\d{8}T\d{6}Z\.json$/.test(m[1]), `file name ${m[1]}`);
    check(r.json && Array.isArray(r.json.items) && typeof r.json.count === "number", `payload ${short(r.text)}`);
    check(r.json.items.some((it) => it.id === "e2e-a"), "the approved item is not in the snapshot");
    return m[1];
  });

  await step("error bodies", async () => {
    // Provoke the common failures, then check every error the run has seen.
    await call("PUT", state.a ? itemPath(state.a) : `/v1/ground-truths/${DS}/00000000-0000-0000-0000-000000000000/x`, { body: { status: "draft" } });
    await call("POST", "/v1/ground-truths", { raw: "[{" });
    await call("GET", `/v1/ground-truths/${DS}/00000000-0000-0000-0000-000000000000/nope`);
    const bad = [];
    for (const r of seenErrors) {
      const where = `${r.method} ${r.path} → ${r.status}`;
      const ctype = r.headers.get("Content-Type") || "";
      if (r.method === "HEAD") continue;
      if (r.text === "") bad.push(`${where}: empty body`);
      else if (r.json === undefined) bad.push(`${where}: not JSON: ${short(r.text)}`);
      else if (typeof r.json.detail !== "string" || r.json.detail === "") bad.push(`${where}: detail ${JSON.stringify(r.json.detail)}`);
      else if (r.json.status !== r.status) bad.push(`${where}: status key ${r.json.status}`);
      else if (typeof r.json.code !== "string") bad.push(`${where}: code ${JSON.stringify(r.json.code)}`);
      else if (ctype !== "application/json") bad.push(`${where}: Content-Type ${ctype}`);
    }
    check(bad.length === 0, bad.join("; "));
    const required = seenErrors.find((r) => r.status === 412 && r.json && r.json.code === "ETAG_REQUIRED");
    check(required, "a PUT without If-Match did not answer 412 ETAG_REQUIRED");
    return `${seenErrors.length} error responses, all JSON with a string detail`;
  });

  await step("JSON content type", async () => {
    check(wrongTypes.length === 0, wrongTypes.join("; "));
    return "every /v1 JSON answer is application/json";
  });
}

function finish() {
  document.getElementById("report").textContent = JSON.stringify(report, null, 1);
  document.title = "done";
}

run().catch((e) => {
  report.push({ name: "page", ok: false, detail: "uncaught: " + (e && e.stack ? e.stack : e) });
}).finally(finish);
