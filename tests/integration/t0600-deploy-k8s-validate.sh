#!/usr/bin/env bash
# Every Kubernetes manifest in deploy/kubernetes/ (and every ```yaml k8s
# block of docs/deploy.md) passes the Kubernetes schemas offline
# (deploy/kubernetes/validate: kubernetes-models and
# @kubernetes-models/prometheus-operator, `npm ci` by scripts/install-deps.sh
# all); broken copies fail; the agent accepts the ConfigMap's config and
# rules; the DaemonSet adds exactly the capabilities the agent's threads
# keep (src/common/caps.h).
. "$(dirname "$0")/lib.sh"
need node
need python3

root="$TEST_SRC/.."
k8s="$root/deploy/kubernetes"
val="$k8s/validate"
[ -d "$val/node_modules/kubernetes-models" ] ||
	skip "deploy/kubernetes/validate: run npm ci there (scripts/install-deps.sh all)"

mapfile -t manifests < <(find "$k8s" -path "$val" -prune -o -name '*.yaml' -print | sort)
[ ${#manifests[@]} -ge 4 ] || fail "expected the manifests in deploy/kubernetes, found ${#manifests[@]}"
node "$val/validate.js" "${manifests[@]}" "$root/docs/deploy.md" >"$T_DIR/ok.txt" 2>&1 ||
	{
		cat "$T_DIR/ok.txt" >&2
		fail "a manifest does not validate"
	}
grep -q 'apps/v1 DaemonSet/gpuwatch' "$T_DIR/ok.txt" || fail "the DaemonSet was not checked"
grep -q 'monitoring.coreos.com/v1 ServiceMonitor/gpuwatch' "$T_DIR/ok.txt" ||
	fail "the ServiceMonitor was not checked"
grep -q 'MutatingAdmissionPolicy/' "$T_DIR/ok.txt" || fail "the admission policy was not checked"
grep -q 'docs/deploy.md:.*DaemonSet\|docs/deploy.md:.*Pod/' "$T_DIR/ok.txt" ||
	fail "docs/deploy.md's examples were not checked"
ok "$(tail -n1 "$T_DIR/ok.txt") ($(basename -a "${manifests[@]}" | tr '\n' ' '))"

# The validator fails on broken documents: each edit of the DaemonSet, the
# ServiceMonitor or a pod makes one document invalid.
python3 - "$k8s" "$T_DIR" <<'PY'
import sys, yaml
k8s, out = sys.argv[1], sys.argv[2]
ds = [d for d in yaml.safe_load_all(open(k8s + "/gpuwatch.yaml")) if d and d["kind"] == "DaemonSet"][0]
sm = yaml.safe_load(open(k8s + "/servicemonitor.yaml"))
def c(d): return yaml.safe_load(yaml.safe_dump(d))
cases = {}
x = c(ds); x["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "http"; cases["port-string"] = x
x = c(ds); del x["spec"]["template"]["spec"]["containers"][0]["name"]; cases["no-name"] = x
x = c(ds); x["spec"]["template"]["spec"]["hostPID"] = "yes"; cases["hostpid-string"] = x
x = c(ds); x["spec"]["template"]["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] = "BPF"; cases["caps-not-list"] = x
x = c(ds); x["apiVersion"] = "apps/v1beta9"; cases["bad-version"] = x
x = c(sm); x["spec"]["endpoints"][0]["honorLabels"] = "true"; cases["sm-string-bool"] = x
x = c(sm); del x["spec"]["selector"]; cases["sm-no-selector"] = x
for name, d in cases.items():
    open(f"{out}/broken-{name}.yaml", "w").write(yaml.safe_dump(d))
PY
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: [\n' >"$T_DIR/broken-yaml.yaml"
# One run over all of them (node starts slowly): each must fail on its own.
if node "$val/validate.js" "$T_DIR"/broken-*.yaml >"$T_DIR/out.txt" 2>&1; then
	cat "$T_DIR/out.txt" >&2
	fail "the broken documents passed the validation"
fi
n=0
for f in "$T_DIR"/broken-*.yaml; do
	grep -q "^FAIL $f:" "$T_DIR/out.txt" || {
		cat "$T_DIR/out.txt" >&2
		fail "$(basename "$f") passed the validation"
	}
	n=$((n + 1))
done
grep -q '^ok ' "$T_DIR/out.txt" && fail "a broken document passed: $(grep '^ok ' "$T_DIR/out.txt")"
[ $n -eq 8 ] || fail "expected 8 broken documents, checked $n"
ok "$n broken documents refused"

# The ConfigMap's agent config and rules are what the agent accepts.
python3 - "$k8s/gpuwatch.yaml" "$T_DIR" <<'PY'
import sys, yaml
cm = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ConfigMap"][0]
for k, v in cm["data"].items():
    open(f"{sys.argv[2]}/{k}", "w").write(v)
PY
sed -i "s|/etc/gpuwatch/rules/site.yml|$T_DIR/site.yml|" "$T_DIR/agent.yaml"
"$GPUWATCH" rules check "$T_DIR/site.yml" >"$T_DIR/rules.txt" 2>&1 ||
	{
		cat "$T_DIR/rules.txt" >&2
		fail "the ConfigMap's rules do not load"
	}
"$GPUWATCH" agent --config "$T_DIR/agent.yaml" --data-dir "$T_DIR/data" --check-config \
	>"$T_DIR/check.txt" 2>&1 || {
	cat "$T_DIR/check.txt" >&2
	fail "the ConfigMap's agent.yaml does not pass --check-config"
}
ok "the ConfigMap's agent.yaml and rules pass the agent's own checks"

# Capabilities: the union of what the threads keep, nothing more.
python3 - "$k8s/gpuwatch.yaml" "$root/src/common/caps.h" <<'PY' || fail "capabilities differ from src/common/caps.h"
import re, sys, yaml
ds = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet"][0]
pod = ds["spec"]["template"]["spec"]
sc = pod["containers"][0]["securityContext"]
h = open(sys.argv[2]).read()
macro = {}
for m in re.finditer(r"#define (GW_CAPS_\w+)\s+((?:.*\\\n)*.*)", h):
    macro[m.group(1)] = m.group(2).replace("\\\n", " ")
def expand(name):
    body = macro[name]
    caps = set(re.findall(r"GW_CAP\(GW_CAP_(\w+)\)", body))
    for sub in re.findall(r"\b(GW_CAPS_\w+)\b", body):
        caps |= expand(sub)
    return caps
need = expand("GW_CAPS_EBPF") | expand("GW_CAPS_CUPTI") | expand("GW_CAPS_ATTRIB")
have = set(sc["capabilities"]["add"])
errs = []
if have != need:
    errs.append(f"adds {sorted(have)}, the threads keep {sorted(need)}")
if sc["capabilities"].get("drop") != ["ALL"]:
    errs.append("does not drop ALL")
if sc.get("privileged") or sc.get("allowPrivilegeEscalation") is not False:
    errs.append("privileged or allows escalation")
if not sc.get("readOnlyRootFilesystem"):
    errs.append("root filesystem writable")
if pod.get("hostPID") is not True:
    errs.append("no hostPID")
for e in errs:
    print("DaemonSet:", e, file=sys.stderr)
sys.exit(1 if errs else 0)
PY
ok "the DaemonSet adds exactly the capabilities of src/common/caps.h, drops the rest"
