#!/usr/bin/env node
/*
 * cosmos-launcher.js — the "fixed launcher" of the Cosmos DB test server.
 *
 * Starts the Cosmos DB test server @vercel/cosmosdb-server, exactly version 1.0.1, with some
 * of its handler and utility functions replaced IN MEMORY (the installed files are never
 * edited), so that it behaves like Cosmos DB where the stock server does not:
 *
 *   gap 1  a point read of a missing item answers 404 NotFound (stock: 500 "Cannot read
 *          properties of undefined"); every document-level 404 carries a Cosmos-style body
 *          {"code":"NotFound","message":...};
 *   gap 3  items of a container with a hierarchical partition key are identified by the full
 *          key (stock: by the first component only, so the same id under another bucket was
 *          a 409 Conflict and reads could hit the wrong item);
 *   gap 2  queries honour the partition-key header; no header, an empty key or [{}] stays
 *          cross-partition; a prefix of a hierarchical key scopes to that prefix;
 *   gap 4  transactional batch takes the partition key from the request header when an
 *          operation has none, supports patch operations, and an atomic batch that fails is
 *          rolled back and answers 207 with the failing status and 424 for the others;
 *   gap 5  partition key range ids are strings, as the SDKs expect;
 *   gap 6  patch predicates keep their case and are evaluated against the patched item only.
 *   speed  connections are kept alive (stock: "connection: close" on every response, so every
 *          request paid for a new connection);
 *          queries run in linear time: the query engine (@zeit/cosmosdb-query 0.7.2) builds
 *          the rows of FROM with an array spread per document, which is quadratic in the
 *          number of documents a query reads (a count over 20,000 items took 2.9 s); the
 *          generated code is rewritten to append instead. Results are unchanged.
 *
 * Usage (the same flags as the package's own cosmosdb-server command):
 *   node tools/test-servers/cosmos-launcher.js --host 127.0.0.1 -p 8081 --no-ssl
 * The package is found through COSMOSDB_SERVER_LIB (its lib directory) or in
 * tools/test-servers/node_modules/@vercel/cosmosdb-server/lib next to this script.
 *
 * Functions below are adapted from @vercel/cosmosdb-server 1.0.1, whose notice follows:
 *
 * The MIT License (MIT)
 *
 * Copyright (c) 2020 Vercel, Inc.
 *
 * Permission is hereby granted, free of charge, to any person obtaining a copy
 * of this software and associated documentation files (the "Software"), to deal
 * in the Software without restriction, including without limitation the rights
 * to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 * copies of the Software, and to permit persons to whom the Software is
 * furnished to do so, subject to the following conditions:
 *
 * The above copyright notice and this permission notice shall be included in all
 * copies or substantial portions of the Software.
 *
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 * LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 * OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
 * SOFTWARE.
 */
"use strict";

const fs = require("fs");
const path = require("path");

const SUPPORTED_VERSION = "1.0.1";

// 1. Find the package and refuse any version but the one these replacements were written for.
const lib = path.resolve(
  process.env.COSMOSDB_SERVER_LIB ||
    path.join(__dirname, "node_modules", "@vercel", "cosmosdb-server", "lib")
);
let version;
try {
  version = JSON.parse(fs.readFileSync(path.join(lib, "..", "package.json"), "utf8")).version;
} catch (err) {
  console.error(`cosmos-launcher: cannot read the package.json of @vercel/cosmosdb-server next to ${lib}: ${err.message}`);
  console.error(`cosmos-launcher: install it with "npm ci --prefix tools/test-servers", or set COSMOSDB_SERVER_LIB`);
  process.exit(1);
}
if (version !== SUPPORTED_VERSION) {
  console.error(`cosmos-launcher: found @vercel/cosmosdb-server ${version} in ${lib}, but this launcher only supports exactly ${SUPPORTED_VERSION}; its fixes replace functions of that version`);
  process.exit(1);
}

const load = (rel) => require(path.join(lib, rel));
const expectFunction = (obj, name, where) => {
  if (!obj || typeof obj[name] !== "function") {
    console.error(`cosmos-launcher: ${where}.${name} is not a function; the installed package is not the expected ${SUPPORTED_VERSION} build`);
    process.exit(1);
  }
};

const partitionHeader = load("utils/get-partition-from-header");
const getValue = load("utils/get-value").default;
const trueHeader = load("true-header").default;
const readJSON = load("json").default;
const readItems = load("handler/_read-items").default;
const documentOperations = load("handler/_document-operations");
const patchOperations = load("handler/_patch-operations");
const Items = load("account/items").default;
const Documents = load("account/documents").default;
const PartitionKeyRanges = load("account/partition-key-ranges").default;
const createQuery = require(require.resolve("@zeit/cosmosdb-query", { paths: [lib] })).default;

// Speed: the generated code of every query builds its FROM rows with
//   $c.reduce(($, c) => typeof c !== "undefined" ? [...$, { c: c }] : $, [])
// which copies the accumulator once per document. Rewrite that one shape (FROM <alias>, no
// JOIN) to push onto the accumulator, which the reduce owns; anything else is left as it is.
{
  const proto = Object.getPrototypeOf(createQuery("SELECT * FROM c"));
  const codeProp = Object.getOwnPropertyDescriptor(proto, "code");
  if (!codeProp || typeof codeProp.get !== "function") {
    console.error("cosmos-launcher: @zeit/cosmosdb-query has no code getter; refusing to start");
    process.exit(1);
  }
  const spread = /\? \[\.\.\.\$, \{\s*(\w+): (\w+)\s*\}\] : \$, \[\]\)/g;
  Object.defineProperty(proto, "code", {
    configurable: true,
    get() {
      if (this._linearCode === undefined) {
        this._linearCode = codeProp.get.call(this).replace(spread, "? ($.push({ $1: $2 }), $) : $, [])");
      }
      return this._linearCode;
    },
  });
}

expectFunction(partitionHeader, "parsePartitionKey", "utils/get-partition-from-header");
expectFunction(partitionHeader, "default", "utils/get-partition-from-header");
for (const name of ["createOperation", "readOperation", "replaceOperation", "upsertOperation", "deleteOperation"]) {
  expectFunction(documentOperations, name, "handler/_document-operations");
}
expectFunction(patchOperations, "patchOperation", "handler/_patch-operations");
expectFunction(Items.prototype, "_getPartition", "Items.prototype");
expectFunction(Items.prototype, "query", "Items.prototype");
expectFunction(PartitionKeyRanges.prototype, "create", "PartitionKeyRanges.prototype");

const NOT_FOUND_MESSAGE = "Entity with the specified id does not exist in the system.,";
const notFound = (res) => {
  res.statusCode = 404;
  return { code: "NotFound", message: NOT_FOUND_MESSAGE };
};

// 2a. Hierarchical partition keys (gap 3). A document's partition is its whole key: with more
// than one path, the JSON array of all components (undefined written as {} like the SDKs do);
// with one path, the component itself, as upstream. The partition-key header is turned into
// the same value, so create, read, replace, upsert, patch and delete address the full key.
const canonicalKey = (values) => JSON.stringify(values.map((v) => (v === undefined ? {} : v)));
const splitPath = (p) => p.replace(/^\//, "").split("/");
const isEmptyObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0;

const upstreamGetPartition = Items.prototype._getPartition;
Documents.prototype._getPartition = function getPartition(data) {
  const paths = this._partitionKeyPath || [];
  if (paths.length < 2) return upstreamGetPartition.call(this, data);
  return canonicalKey(paths.map((p) => getValue(splitPath(p), data)));
};

const upstreamParsePartitionKey = partitionHeader.parsePartitionKey;
partitionHeader.parsePartitionKey = function parsePartitionKey(partitionKey, defaultValue) {
  let parsed;
  try {
    parsed = JSON.parse(partitionKey);
  } catch (err) {
    return upstreamParsePartitionKey(partitionKey, defaultValue); // throws upstream's error
  }
  if (Array.isArray(parsed) && parsed.length > 1) return canonicalKey(parsed);
  return upstreamParsePartitionKey(partitionKey, defaultValue);
};

// 2b. Point read (gap 1): upstream used the document before checking that it exists.
function collectionPartitionKeys(collection) {
  if (!collection.partitionKey) return [];
  return collection.partitionKey.paths.map((p) => p.slice(1)).filter((p) => p !== "_partitionKey");
}
function clientPartitionKeys(headers) {
  const key = headers["x-ms-documentdb-partitionkey"];
  if (!key || key === "[{}]") return [];
  try {
    const parsed = JSON.parse(key);
    return Array.isArray(parsed) ? parsed : [parsed];
  } catch (err) {
    return [];
  }
}
function readDocument(account, req, res, { dbId, collId, docId }) {
  const collection = account.database(dbId).collection(collId);
  const props = collection.read();
  if (!props) return notFound(res);
  const partitionKey = partitionHeader.default(req);
  if (!trueHeader(req, "x-ms-documentdb-query-enablecrosspartition")) {
    const collectionKeys = collectionPartitionKeys(props);
    const clientKeys = clientPartitionKeys(req.headers);
    if (collectionKeys.length > clientKeys.length) {
      res.statusCode = 400;
      return {
        code: "BadRequest",
        message: "The partition key supplied in x-ms-partitionkey header has fewer components than defined in the collection"
      };
    }
    const data = collection.document(docId, partitionHeader.parsePartitionKey(partitionKey, docId)).read();
    if (!data) return notFound(res);
    for (let i = 0; i < collectionKeys.length; i += 1) {
      const have = getValue(splitPath(collectionKeys[i]), data);
      const want = clientKeys[i];
      if (have !== want && !(have === undefined && isEmptyObject(want))) return notFound(res);
    }
  }
  const result = documentOperations.readOperation(collection, { partitionKey, id: docId });
  res.statusCode = result.statusCode;
  return result.body;
}

// 2c. Query scope (gap 2). Upstream evaluated every query over the whole container.
function queryScope(req) {
  const raw = partitionHeader.default(req);
  if (!raw) return null;
  let parsed;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    return null;
  }
  if (!Array.isArray(parsed)) parsed = [parsed];
  if (parsed.length === 0 || (parsed.length === 1 && isEmptyObject(parsed[0]))) return null;
  return parsed;
}
function inScope(documents, key) {
  const paths = documents._partitionKeyPath && documents._partitionKeyPath.length ? documents._partitionKeyPath : ["/id"];
  if (paths.length === 1 && paths[0] === "/_partitionKey") return () => true; // legacy, unpartitioned
  const getters = key.map((_, i) => (i < paths.length ? splitPath(paths[i]) : null));
  return (item) =>
    key.every((want, i) => {
      if (!getters[i]) return false;
      const have = getValue(getters[i], item);
      // Two strings compare directly; other values (numbers, null, the undefined key {})
      // go through the canonical form, as upstream.
      if (have === want) return true;
      if (typeof have === "string" && typeof want === "string") return false;
      return canonicalKey([have]) === canonicalKey([want]);
    });
}
async function queryDocuments(account, req, res, { dbId, collId }) {
  return readItems(req, res, "Documents", async ({ continuation, maxItemCount }) => {
    const body = await readJSON(req);
    if (!body.query) {
      res.statusCode = 400;
      return { message: "missing query" };
    }
    const collection = account.database(dbId).collection(collId);
    const scope = queryScope(req);
    if (!scope && !trueHeader(req, "x-ms-documentdb-query-enablecrosspartition")) {
      const { partitionKey } = collection.read() || {};
      const paths = (partitionKey || {}).paths || [];
      if (paths.length && !createQuery(body.query).containsPartitionKeys(paths)) {
        res.statusCode = 400;
        return { message: "missing partition keys" };
      }
    }
    let { documents } = collection;
    if (scope && collection.read()) {
      const keep = inScope(documents, scope);
      const filtered = new Map();
      documents._data.forEach((item, rid) => {
        if (keep(item.read())) filtered.set(rid, item);
      });
      documents = Object.create(documents, { _data: { value: filtered } });
    }
    try {
      return Items.prototype.query.call(documents, body, { continuation, maxItemCount });
    } catch (err) {
      if (err.badRequest) {
        res.statusCode = 400;
        return { message: err.message };
      }
      throw err;
    }
  });
}

// 2d. Patch predicates (gap 6): upstream lower-cased the whole predicate and matched it
// against every item with the same id. Evaluate it, case kept, against the item itself, then
// let upstream apply the operations.
const upstreamPatchOperation = patchOperations.patchOperation;
patchOperations.patchOperation = function patchOperation(collection, input) {
  if (!input.condition) return upstreamPatchOperation(collection, input);
  const data = collection.document(input.id, partitionHeader.parsePartitionKey(input.partitionKey, input.id)).read();
  if (data && !(input.ifMatch && input.ifMatch !== data._etag)) {
    const condition = String(input.condition).trim();
    let sql;
    if (/^select\s/i.test(condition)) sql = condition;
    else if (/^from\s/i.test(condition)) sql = `SELECT * ${condition}`;
    else if (/^where\s/i.test(condition)) sql = `SELECT * FROM c ${condition}`;
    else sql = `SELECT * FROM c WHERE ${condition}`;
    let matched;
    try {
      const { documents } = collection;
      const result = documents._getQuery(sql).exec([data], { parameters: [], udf: documents._userDefinedFunctions() });
      matched = result.result.length > 0;
    } catch (err) {
      return { statusCode: 400, body: { code: "BadRequest", message: `Invalid condition in patch request: ${err.message}` } };
    }
    if (!matched) {
      return {
        statusCode: 412,
        body: { code: "PreconditionFailed", message: "Condition specified in the patch request is not satisfied." }
      };
    }
  }
  return upstreamPatchOperation(collection, { ...input, condition: undefined });
};

// 2e. Transactional batch (gap 4).
async function batchDocuments(account, req, res, { dbId, collId }) {
  const body = await readJSON(req);
  const isAtomic = trueHeader(req, "x-ms-cosmos-batch-atomic");
  const continueOnError = trueHeader(req, "x-ms-cosmos-batch-continue-on-error");
  const collection = account.database(dbId).collection(collId);
  if (!collection.read()) return notFound(res);
  if (!Array.isArray(body)) {
    res.statusCode = 400;
    return { code: "BadRequest", message: "Invalid request body" };
  }
  const headerKey = partitionHeader.default(req);
  const docs = collection.documents;
  // An atomic batch keeps an undo log of the entries its operations touch (not a copy of the
  // container, which made every batch cost as much as the container is large).
  const undo = isAtomic ? [journal(docs._data), journal(docs._index)] : [];
  const ridCount = docs._ridCount;
  const rollback = () => {
    undo.forEach((j) => j.undo());
    docs._ridCount = ridCount;
  };
  try {
    return runBatch();
  } catch (err) {
    if (isAtomic) rollback();
    throw err;
  } finally {
    undo.forEach((j) => j.end());
  }
  function runBatch() {
    const results = [];
    let failedAt = -1;
    for (let i = 0; i < body.length; i += 1) {
      const op = body[i] || {};
      if (failedAt >= 0 && !continueOnError) {
        results.push({ statusCode: 424, requestCharge: 0 });
        continue; // eslint-disable-line no-continue
      }
      const input = { ...op, partitionKey: op.partitionKey !== undefined ? op.partitionKey : headerKey };
      let result;
      switch (op.operationType) {
        case "Create":
          result = documentOperations.createOperation(collection, input);
          break;
        case "Upsert":
          result = documentOperations.upsertOperation(collection, input);
          break;
        case "Read":
          result = documentOperations.readOperation(collection, input);
          break;
        case "Delete":
          result = documentOperations.deleteOperation(collection, input);
          break;
        case "Replace":
          result = documentOperations.replaceOperation(collection, input);
          break;
        case "Patch": {
          const patch = Array.isArray(op.resourceBody) ? { operations: op.resourceBody } : op.resourceBody || {};
          result = patchOperations.patchOperation(collection, {
            id: op.id,
            partitionKey: input.partitionKey,
            ifMatch: op.ifMatch,
            operations: patch.operations || [],
            condition: patch.condition
          });
          break;
        }
        default:
          if (isAtomic) rollback();
          res.statusCode = 400;
          return { code: "BadRequest", message: `Operation type '${op.operationType}' is not supported in Batch.` };
      }
      if (result.statusCode >= 400) {
        if (failedAt < 0) failedAt = i;
        results.push({ statusCode: result.statusCode, requestCharge: 0, resourceBody: result.body });
      } else {
        results.push({
          statusCode: result.statusCode,
          requestCharge: 1,
          eTag: result.body ? result.body._etag : undefined,
          resourceBody: result.body
        });
      }
    }
    if (isAtomic && failedAt >= 0) {
      rollback();
      res.statusCode = 207;
      return results.map((r, i) => (i === failedAt ? r : { statusCode: 424, requestCharge: 0 }));
    }
    return results;
  }
}

// journal records the first value (or absence) of every key set or deleted in map until end
// is called; undo puts those back.
function journal(map) {
  const before = new Map();
  const remember = (k) => {
    if (!before.has(k)) before.set(k, { had: Map.prototype.has.call(map, k), value: Map.prototype.get.call(map, k) });
  };
  map.set = function set(k, v) {
    remember(k);
    return Map.prototype.set.call(this, k, v);
  };
  map.delete = function del(k) {
    remember(k);
    return Map.prototype.delete.call(this, k);
  };
  return {
    undo() {
      before.forEach(({ had, value }, k) => (had ? Map.prototype.set.call(map, k, value) : Map.prototype.delete.call(map, k)));
    },
    end() {
      delete map.set;
      delete map.delete;
    }
  };
}

// 2f. Partition key range ids are strings in Cosmos DB (gap 5); upstream created "id": 0.
const upstreamCreateRange = PartitionKeyRanges.prototype.create;
PartitionKeyRanges.prototype.create = function create(data) {
  return upstreamCreateRange.call(this, data && data.id !== undefined ? { ...data, id: String(data.id) } : data);
};

// 2g. Install the handlers before the router (lib/routes.js, loaded by lib/index.js) reads
// them, and give every document-level 404 a Cosmos-style body.
const replaceHandler = (rel, fn) => {
  const mod = load(rel);
  expectFunction(mod, "default", rel);
  mod.default = fn;
};
replaceHandler("handler/read-document", readDocument);
replaceHandler("handler/query-documents", queryDocuments);
replaceHandler("handler/batch-documents", batchDocuments);
for (const rel of ["handler/delete-document", "handler/replace-document", "handler/patch-document", "handler/upsert-document"]) {
  const mod = load(rel);
  expectFunction(mod, "default", rel);
  const upstream = mod.default;
  mod.default = async (account, req, res, params) => {
    const body = await upstream(account, req, res, params);
    if (res.statusCode === 404 && (!body || !body.code)) return notFound(res);
    return body;
  };
}

// 3. Start the server like lib/cli.js does, with its flags and its ready line.
const { createHttpServer, createHttpsServer } = load("index");
const argv = process.argv.slice(2);
const args = {};
while (argv.length) {
  const key = argv.shift();
  switch (key) {
    case "-h":
    case "--help":
      args.help = true;
      break;
    case "-p":
    case "--port":
      args.port = parseInt(argv.shift(), 10);
      break;
    case "--host":
      args.hostname = argv.shift();
      break;
    case "--no-ssl":
      args.nossl = true;
      break;
    default:
      break;
  }
}
if (args.help) {
  console.log(`
Usage: cosmos-launcher.js [options]   (@vercel/cosmosdb-server ${SUPPORTED_VERSION} with its gaps fixed in memory)

Options:

  -h, --help
  -p, --port
  --no-ssl
  --host
`);
  process.exit();
}
// Connections are kept alive, as Cosmos DB keeps them (the stock server answers every request
// with "connection: close", so a client dials a new connection for each one), and stay open
// longer than an idle client keeps them (Go's transports drop an idle connection after 90 s),
// so the server never closes one just as a client sends a request on it.
const server = (args.nossl ? createHttpServer : createHttpsServer)({ keepAlive: true });
server.keepAliveTimeout = 120 * 1000;
server.listen(args.port, args.hostname, () => {
  const { address, family, port } = server.address();
  // eslint-disable-next-line no-nested-ternary
  const hostname = args.hostname ? args.hostname : family === "IPv6" ? `[${address}]` : address;
  console.log(`Ready to accept HTTP${args.nossl ? "" : "S"} connections at ${hostname}:${port}`);
});
