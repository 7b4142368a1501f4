#!/usr/bin/env node
// Validates Kubernetes manifests offline (no cluster, no network) against the
// schemas that kubernetes-models generates from Kubernetes' OpenAPI spec
// (v1.33) and @kubernetes-models/prometheus-operator from the Prometheus
// Operator's CRDs (v0.65), in three passes per document:
//   1. the model's validate(): types, required fields, enums, formats;
//   2. TypeScript's excess-property check against the model's interface:
//      unknown fields at any depth (the OpenAPI schema does not forbid
//      additional properties, so pass 1 accepts `spec.replicass`);
//   3. metadata.name present (an API-server rule, not in the schema).
// Kubectl cannot do this without a server: even --dry-run=client asks the API
// server for the schema.
// Usage: node validate.mjs FILE.yaml...  (exit 0: all valid; 1: a line per
// problem, each with its document and JSON path).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const require = createRequire(import.meta.url);
const ts = require("typescript");

// API groups whose models are in a package of their own.
const CRD_PACKAGES = {
  "monitoring.coreos.com": "@kubernetes-models/prometheus-operator",
};

function modelModule(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/")
    ? apiVersion.split("/")
    : ["", apiVersion];
  if (CRD_PACKAGES[group]) {
    return `${CRD_PACKAGES[group]}/${group}/${version}/${kind}`;
  }
  return `kubernetes-models/${group ? group + "/" : ""}${version}/${kind}`;
}

// null means "unset" to the API server.
function withoutNulls(v) {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (v && typeof v === "object") {
    return Object.fromEntries(
      Object.entries(v)
        .filter(([, x]) => x !== null)
        .map(([k, x]) => [k, withoutNulls(x)]),
    );
  }
  return v;
}

// Pretty-prints `v` as a TypeScript literal, one value per line, recording
// the JSON path of each line so that TypeScript's errors can name the field.
function printLines(v, path, depth, lines, paths, prefix = "") {
  const pad = "  ".repeat(depth);
  if (v && typeof v === "object") {
    const array = Array.isArray(v);
    const entries = array ? v.map((x, i) => [i, x]) : Object.entries(v);
    lines.push(pad + prefix + (array ? "[" : "{"));
    paths.push(path);
    entries.forEach(([k, x], i) => {
      const p = array ? `${path}[${k}]` : `${path}.${k}`;
      const first = lines.length;
      printLines(x, p, depth + 1, lines, paths,
                 array ? "" : JSON.stringify(k) + ": ");
      if (i < entries.length - 1) lines[lines.length - 1] += ",";
      for (let j = first; j < lines.length; j++) paths[j] ??= p;
    });
    lines.push(pad + (array ? "]" : "}"));
    paths.push(path);
  } else {
    lines.push(pad + prefix + JSON.stringify(v));
    paths.push(path);
  }
}

const results = [];  // {where, errors}
const typeChecks = [];
for (const file of process.argv.slice(2)) {
  // YAML 1.1, as kubectl reads it (yes/no booleans, 0755 octal).
  const docs = parseAllDocuments(readFileSync(file, "utf8"), { version: "1.1" });
  for (const [i, doc] of docs.entries()) {
    const r = { where: `${file}#${i}`, errors: [] };
    if (doc.errors.length) {
      r.errors.push(`YAML: ${doc.errors[0].message}`);
      results.push(r);
      continue;
    }
    const obj = doc.toJS();
    if (obj == null) continue;  // an empty document
    results.push(r);
    if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
      r.errors.push("apiVersion and kind are required");
      continue;
    }
    r.where += ` ${obj.apiVersion} ${obj.kind} ${obj.metadata?.name ?? ""}`;
    const module = modelModule(obj.apiVersion, obj.kind);
    let Model;
    try {
      Model = (await import(module))[obj.kind];
    } catch {
      Model = undefined;
    }
    if (!Model) {
      r.errors.push(`no schema for ${obj.apiVersion} ${obj.kind} (${module})`);
      continue;
    }
    try {
      new Model(obj).validate();
    } catch (e) {
      for (const d of e.errors ?? [{ message: e.message }]) {
        const where = (d.instancePath || "")
          .replace(/\/(\d+)(?=\/|$)/g, "[$1]")
          .replace(/\//g, ".") || ".";
        const allowed = d.params?.allowedValues
          ? ` ${JSON.stringify(d.params.allowedValues)}`
          : "";
        r.errors.push(`${where}: ${d.message}${allowed}`);
      }
    }
    if (!obj.metadata?.name && !obj.metadata?.generateName) {
      r.errors.push(".metadata.name: required");
    }
    typeChecks.push({ r, module, kind: obj.kind, obj: withoutNulls(obj) });
  }
}

if (typeChecks.length) {
  // Beside node_modules, so that the imports resolve.
  const dir = mkdtempSync(join(dirname(fileURLToPath(import.meta.url)), ".check-"));
  try {
    const files = typeChecks.map((c, n) => {
      const lines = [];
      const paths = [];
      printLines(c.obj, "", 0, lines, paths, "const doc: T = ");
      c.paths = [undefined, ...paths];  // line 0 is the import
      c.file = join(dir, `doc${n}.mts`);
      writeFileSync(c.file,
                    `import type { I${c.kind} as T } from "${c.module}";\n` +
                        lines.join("\n") + ";\nexport default doc;\n");
      return c.file;
    });
    const program = ts.createProgram(files, {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: [],
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
    });
    const diagnostics = ts.getPreEmitDiagnostics(program);
    for (const c of typeChecks) {
      for (const d of diagnostics.filter((d) => d.file?.fileName === c.file)) {
        const { line } = d.file.getLineAndCharacterOfPosition(d.start);
        const text = ts.flattenDiagnosticMessageText(d.messageText, " ");
        const unknown = /'"?([^'"]+)"?' does not exist in type/.exec(text);
        const path = c.paths[line] || ".";
        if (unknown) {
          c.r.errors.push(`${path}: unknown field "${unknown[1]}"`);
        } else if (!c.r.errors.length) {
          // Type and required-field errors are pass 1's, better worded.
          c.r.errors.push(`${path}: ${text.slice(0, 200)}`);
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let failed = 0;
for (const r of results) {
  console.log(`${r.errors.length ? "FAIL" : "ok  "} ${r.where}`);
  for (const e of new Set(r.errors)) console.log(`       ${e}`);
  if (r.errors.length) failed++;
}
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed || results.length === 0 ? 1 : 0);
