# unique-series.awk - reads a Prometheus or OpenMetrics exposition and
# fails (exit 1, one "duplicate series: ..." line each on stdout) when a
# series - its name and its set of labels, in any order - appears twice.
# Prometheus refuses such a scrape, or keeps one value at random.
#   awk -f unique-series.awk FILE
# Used by lib.sh's scrape (every /metrics a test reads) and by the GPU
# tests.
function key(line,    i, s, name, n, kv, k, j, t, out) {
	i = index(line, "{")
	if (i == 0) {
		split(line, f, " ")
		return f[1]
	}
	name = substr(line, 1, i - 1)
	s = substr(line, i + 1)
	n = 0
	while (match(s, /^[A-Za-z_][A-Za-z0-9_]*="([^"\\]|\\.)*"/)) {
		P[++n] = substr(s, 1, RLENGTH)
		s = substr(s, RLENGTH + 1)
		if (substr(s, 1, 1) != ",")
			break
		s = substr(s, 2)
	}
	# Insertion sort: the label set, not the order it was written in.
	for (k = 2; k <= n; k++) {
		t = P[k]
		for (j = k - 1; j >= 1 && P[j] > t; j--)
			P[j + 1] = P[j]
		P[j + 1] = t
	}
	out = name "{"
	for (k = 1; k <= n; k++)
		out = out (k > 1 ? "," : "") P[k]
	return out "}"
}
/^#/ || /^[ \t]*$/ { next }
{
	k = key($0)
	if (seen[k]++ == 1) {
		print "duplicate series: " k
		dups++
	}
}
END { exit dups > 0 }
