#!/usr/bin/env bash
# The layering of src/ (docs/internals/architecture.md) is enforced by the
# build: each layer compiles against BUILD/layers/NAME/, which holds only
# itself and the layers below it.  This checks that the fence is there and
# holds, with the compiler the build uses:
#   - an upward or sideways include fails in every layer that must not see it,
#   - a downward include compiles,
#   - no source reaches around the fence with a relative "../" include.
set -u
layers=$1 src=$2 cc=${3:-cc}
fail=0

# layer: the layers it may include (itself first), from src/CMakeLists.txt.
declare -A may=(
	[common]="common"
	[store]="store common"
	[query]="query store common"
	[pipeline]="pipeline query store common"
	[collect]="collect pipeline query store common"
	[export]="export pipeline query store common"
	[http]="http pipeline query store common"
	[core]="core collect export http pipeline query store common"
	[cli]="cli core collect export http pipeline query store common"
)
# One header of each layer to try.
declare -A header=(
	[common]=common/buf.h [store]=store/labels.h [query]=query/promql.h
	[pipeline]=pipeline/metrics.h [collect]=collect/collector.h
	[export]=export/alertmanager.h [http]=http/api.h [core]=core/agent.h
	[cli]=cli/cli.h
)
for l in "${!may[@]}"; do
	[ -d "$layers/$l" ] || { echo "FAIL: $layers/$l is missing"; fail=1; continue; }
	for h in "${!header[@]}"; do
		printf '#include "%s"\n' "${header[$h]}" |
			"$cc" -std=gnu17 -D_GNU_SOURCE -fsyntax-only -I"$layers/$l" \
				-I"$src/../include" -x c - >/dev/null 2>&1
		ok=$?
		case " ${may[$l]} " in
		*" $h "*) [ $ok -eq 0 ] || { echo "FAIL: $l cannot include ${header[$h]}"; fail=1; } ;;
		*) [ $ok -ne 0 ] || { echo "FAIL: $l can include ${header[$h]} (upward or sideways)"; fail=1; } ;;
		esac
	done
done
if grep -rnE '#[[:space:]]*include[[:space:]]*"\.\./' "$src"; then
	echo 'FAIL: a relative "../" include reaches around the layers'
	fail=1
fi
[ $fail -eq 0 ] && echo "layers: ${#may[@]} layers, each sees only itself and those below"
exit $fail
