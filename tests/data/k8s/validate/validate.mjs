// Offline validation of Kubernetes manifests (test-only, docs/kubernetes.md):
//   node validate.mjs FILE.yaml...
// Each object is checked against the Kubernetes OpenAPI schemas of
// kubernetes-models; a KubeSchedulerConfiguration (a file of its own, or a
// ConfigMap value) against kube-scheduler-config.schema.json plus the rules of
// kube-scheduler's own validation; and the objects of all files together for
// dangling references (service accounts, config maps, roles, service selectors).
// Prints "ok FILE (N objects)" per good file and "error FILE: ..." per problem;
// exits 1 on any problem.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import yaml from "js-yaml";
import Ajv from "ajv";

const here = path.dirname(fileURLToPath(import.meta.url));
const ajv = new Ajv({ allErrors: true, strict: false });
const schedulerSchema = ajv.compile(
  JSON.parse(fs.readFileSync(path.join(here, "kube-scheduler-config.schema.json"), "utf8")));

// Kubernetes' extended resource names: a DNS-subdomain prefix other than
// kubernetes.io, a '/', a qualified name.
function extendedResourceNameError(name) {
  const slash = name.indexOf("/");
  if (slash < 0) return "no domain prefix";
  const prefix = name.slice(0, slash), base = name.slice(slash + 1);
  if (name.includes("kubernetes.io/")) return "a kubernetes.io name";
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(prefix)) return `prefix '${prefix}' is not a DNS subdomain`;
  if (base.length > 63 || !/^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/.test(base)) return `'${base}' is not a qualified name`;
  return "";
}

function checkSchedulerConfig(cfg, where, errors) {
  if (!schedulerSchema(cfg)) {
    for (const e of schedulerSchema.errors) {
      errors.push(`${where}${e.instancePath || "/"} ${e.message}` +
                  (e.params && e.params.additionalProperty ? ` ('${e.params.additionalProperty}')` : ""));
    }
  }
  const names = new Set();
  for (const [i, p] of (cfg.profiles || []).entries()) {
    if (!p.schedulerName) errors.push(`${where}/profiles/${i}/schedulerName is required`);
    else if (names.has(p.schedulerName)) errors.push(`${where}/profiles/${i}/schedulerName '${p.schedulerName}' is a duplicate`);
    names.add(p.schedulerName);
  }
  let binders = 0;
  for (const [i, e] of (cfg.extenders || []).entries()) {
    if (e.prioritizeVerb && !(e.weight > 0)) errors.push(`${where}/extenders/${i}/weight must be positive when prioritizeVerb is set`);
    if (e.bindVerb) binders++;
    const seen = new Set();
    for (const [j, r] of (e.managedResources || []).entries()) {
      const why = extendedResourceNameError(r.name);
      if (why) errors.push(`${where}/extenders/${i}/managedResources/${j}/name '${r.name}': ${why}`);
      if (seen.has(r.name)) errors.push(`${where}/extenders/${i}/managedResources/${j}/name '${r.name}' is a duplicate`);
      seen.add(r.name);
    }
  }
  if (binders > 1) errors.push(`${where}: only one extender may have a bindVerb, found ${binders}`);
  if (cfg.podInitialBackoffSeconds && cfg.podMaxBackoffSeconds &&
      cfg.podMaxBackoffSeconds < cfg.podInitialBackoffSeconds) {
    errors.push(`${where}: podMaxBackoffSeconds is below podInitialBackoffSeconds`);
  }
}

async function checkObject(obj, where, errors) {
  if (!obj || typeof obj !== "object") { errors.push(`${where}: not an object`); return; }
  const { apiVersion, kind } = obj;
  if (apiVersion === "kubescheduler.config.k8s.io/v1") { checkSchedulerConfig(obj, where, errors); return; }
  if (!apiVersion || !kind) { errors.push(`${where}: apiVersion and kind are required`); return; }
  let mod;
  try { mod = await import(`kubernetes-models/${apiVersion}`); } catch {
    errors.push(`${where}: unknown apiVersion ${apiVersion}`); return;
  }
  const Model = mod[kind];
  if (!Model) { errors.push(`${where}: unknown kind ${kind} in ${apiVersion}`); return; }
  try { new Model(obj).validate(); } catch (e) { errors.push(`${where}: ${e.message}`); }
  if (kind === "ConfigMap") {
    for (const [key, value] of Object.entries(obj.data || {})) {
      let inner;
      try { inner = yaml.load(value); } catch { continue; }
      if (inner && inner.kind === "KubeSchedulerConfiguration") {
        checkSchedulerConfig(inner, `${where} data['${key}']`, errors);
      }
    }
  }
}

// References between the objects of all files.
function podSpecOf(o) {
  if (o.kind === "Pod") return o.spec;
  if (["Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job"].includes(o.kind)) return o.spec?.template?.spec;
  return undefined;
}
const builtinRoles = new Set(["extension-apiserver-authentication-reader", "cluster-admin", "admin", "edit", "view"]);

function checkReferences(all, errors) {
  const has = (kind, ns, name) => all.some(({ obj }) => obj.kind === kind && obj.metadata?.name === name &&
                                                       (ns === undefined || (obj.metadata?.namespace || "default") === ns));
  for (const { obj, where } of all) {
    const ns = obj.metadata?.namespace || "default";
    const spec = podSpecOf(obj);
    if (spec) {
      const sa = spec.serviceAccountName;
      if (sa && sa !== "default" && !has("ServiceAccount", ns, sa)) errors.push(`${where}: service account ${ns}/${sa} is not defined`);
      for (const v of spec.volumes || []) {
        if (v.configMap && !has("ConfigMap", ns, v.configMap.name)) errors.push(`${where}: config map ${ns}/${v.configMap.name} is not defined`);
      }
      const labels = obj.spec?.template?.metadata?.labels || {};
      const match = obj.spec?.selector?.matchLabels || {};
      for (const [k, v] of Object.entries(match)) {
        if (labels[k] !== v) errors.push(`${where}: selector ${k}=${v} does not match the pod template's labels`);
      }
    }
    if (obj.kind === "Service" && obj.spec?.selector) {
      const sel = obj.spec.selector;
      const target = all.some(({ obj: w }) => podSpecOf(w) && (w.metadata?.namespace || "default") === ns &&
        Object.entries(sel).every(([k, v]) => (w.spec?.template?.metadata?.labels || {})[k] === v));
      if (!target) errors.push(`${where}: no workload's pods match the selector ${JSON.stringify(sel)}`);
    }
    if (obj.kind === "RoleBinding" || obj.kind === "ClusterRoleBinding") {
      const ref = obj.roleRef || {};
      if (!ref.name.startsWith("system:") && !builtinRoles.has(ref.name) &&
          !has(ref.kind, ref.kind === "Role" ? ns : undefined, ref.name)) {
        errors.push(`${where}: ${ref.kind} ${ref.name} is not defined`);
      }
      for (const s of obj.subjects || []) {
        if (s.kind === "ServiceAccount" && !has("ServiceAccount", s.namespace || ns, s.name)) {
          errors.push(`${where}: subject service account ${s.namespace}/${s.name} is not defined`);
        }
      }
    }
  }
}

const files = process.argv.slice(2);
if (files.length === 0) { console.error("usage: node validate.mjs FILE.yaml..."); process.exit(2); }
let failed = false;
const all = [];
for (const file of files) {
  const errors = [];
  let docs = [];
  try { docs = yaml.loadAll(fs.readFileSync(file, "utf8")).filter((d) => d !== null && d !== undefined); }
  catch (e) { errors.push(`not YAML: ${e.message.split("\n")[0]}`); }
  for (const [i, obj] of docs.entries()) {
    const where = `document ${i + 1} (${obj?.kind || "?"}/${obj?.metadata?.name || "?"})`;
    await checkObject(obj, where, errors);
    if (obj?.kind) all.push({ obj, where: `${path.basename(file)} ${where}` });
  }
  if (errors.length) { failed = true; for (const e of errors) console.log(`error ${file}: ${e}`); }
  else console.log(`ok ${file} (${docs.length} objects)`);
}
const refErrors = [];
checkReferences(all, refErrors);
for (const e of refErrors) { failed = true; console.log(`error ${e}`); }
process.exit(failed ? 1 : 0);
