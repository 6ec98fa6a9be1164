#!/usr/bin/env bash
# docs/metrics.md is the metric catalogue (src/pipeline/catalog.def) as
# `gpuwatch help --metrics-markdown` renders it, and what a running agent
# exposes keeps to it: every gpuwatch_ and DCGM_ family on /metrics is
# listed, with the type listed, and its series carry no label the list
# does not name.
. "$(dirname "$0")/lib.sh"
need curl
need python3

doc="$TEST_SRC/../docs/metrics.md"
"$GPUWATCH" help --metrics-markdown >"$T_DIR/metrics.md" ||
	fail "gpuwatch help --metrics-markdown failed"
diff -u "$doc" "$T_DIR/metrics.md" >&2 ||
	fail "docs/metrics.md differs from the catalogue; regenerate it with 'gpuwatch help --metrics-markdown > docs/metrics.md'"
ok "docs/metrics.md is the catalogue"

start_agent --simulate 2 --interval 0.2 --detail-interval 1 --compat dcgm \
	--fault xid79:1:2
port="$(sed -n 's/.*statsd: listening on udp 127.0.0.1:\([0-9]*\).*/\1/p' "$T_DIR/agent.log" | head -n1)"
if [ -n "$port" ]; then
	printf 'train.loss:0.5|g\n' >"/dev/udp/127.0.0.1/$port"
fi
wait_for gpuwatch_gpu_pcie_link_width 'gpu="0"' 16
wait_for DCGM_FI_DEV_XID_ERRORS 'gpu="1"' 79
scrape >"$T_DIR/scrape.txt"

python3 - "$doc" "$T_DIR/scrape.txt" <<'PY' || fail "/metrics strays from docs/metrics.md"
import re, sys

doc, scrape = sys.argv[1], sys.argv[2]
# Catalogue rows: | `name` | type | unit | labels | ... (type "gauge
# (setting)" for a gauge that holds a setting)
fams = {}
for line in open(doc):
    m = re.match(r"\| `([A-Za-z_:][A-Za-z0-9_:]*)` \| (\w+)(?: \(setting\))? \| [^|]* \| ([^|]*) \|", line)
    if m:
        labels = set(re.findall(r"`([^`]+)`", m.group(3)))
        open_set = "*" in m.group(3)  # a set named by the configuration
        fams[m.group(1)] = (m.group(2), labels, open_set)
if len(fams) < 100:
    sys.exit("only %d families found in %s" % (len(fams), doc))

expo_type = {"gauge": "gauge", "info": "gauge", "counter": "counter",
             "histogram": "histogram", "summary": "summary"}
bad, seen, types = [], set(), {}
for line in open(scrape):
    line = line.rstrip("\n")
    m = re.match(r"# TYPE (\S+) (\S+)", line)
    if m:
        types[m.group(1)] = m.group(2)
        continue
    if not line or line.startswith("#"):
        continue
    m = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})? ", line)
    if not m:
        bad.append("unparsed line: " + line)
        continue
    name = m.group(1)
    fam = name
    if fam not in fams:
        fam = re.sub(r"_(bucket|sum|count)$", "", name)
    if not (fam.startswith("gpuwatch_") or fam.startswith("DCGM_")):
        continue  # application metrics, named by the application
    if fam not in fams:
        bad.append("not in the catalogue: " + name)
        continue
    seen.add(fam)
    kind, allowed, open_set = fams[fam]
    if types.get(fam) != expo_type[kind]:
        bad.append("%s: # TYPE %s, catalogue %s" % (fam, types.get(fam), kind))
    extra = {"histogram": {"le"}, "summary": {"quantile"}}.get(kind, set())
    names = set(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', m.group(3) or ""))
    stray = names - allowed - extra
    if stray and not open_set:
        bad.append("%s: labels %s not in the catalogue" % (name, sorted(stray)))
if len(seen) < 60:
    bad.append("only %d catalogue families on /metrics" % len(seen))
for b in sorted(set(bad)):
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
ok "/metrics keeps to the catalogue's names, types and labels"
stop_agent
