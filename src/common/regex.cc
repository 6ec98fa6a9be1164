/* SPDX-License-Identifier: MIT */
/*
 * regex.cc - the C front to RE2 (regex.h).  The only C++ in the agent:
 * exceptions (std::bad_alloc) stop here and come back as -ENOMEM.
 *
 * Before RE2 sees a pattern, one pass over it (prescan) brings RE2's syntax
 * to Go's where the two differ: Go has no \C (any byte), and Go accepts a
 * group name twice where RE2 refuses it (the second and later become plain
 * groups, so their numbers do not change and a name means its first group,
 * as in Go's Expand).
 */
#include "common/regex.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <new>
#include <set>
#include <string>

#include <re2/re2.h>

#include "common/utf8.h"

struct gw_regex {
	re2::RE2 *re;
	int ngroups;
};

static const char *go_error(re2::RE2::ErrorCode code)
{
	switch (code) {
	case re2::RE2::ErrorBadEscape:
		return "invalid escape sequence";
	case re2::RE2::ErrorBadCharClass:
		return "invalid character class";
	case re2::RE2::ErrorBadCharRange:
		return "invalid character class range";
	case re2::RE2::ErrorMissingBracket:
		return "missing closing ]";
	case re2::RE2::ErrorMissingParen:
		return "missing closing )";
	case re2::RE2::ErrorUnexpectedParen:
		return "unexpected )";
	case re2::RE2::ErrorTrailingBackslash:
		return "trailing backslash at end of expression";
	case re2::RE2::ErrorRepeatArgument:
		return "missing argument to repetition operator";
	case re2::RE2::ErrorRepeatSize:
		return "invalid repeat count";
	case re2::RE2::ErrorRepeatOp:
		return "invalid nested repetition operator";
	case re2::RE2::ErrorBadPerlOp:
		return "invalid or unsupported Perl syntax";
	case re2::RE2::ErrorBadUTF8:
		return "invalid UTF-8";
	case re2::RE2::ErrorBadNamedCapture:
		return "invalid named capture";
	case re2::RE2::ErrorPatternTooLarge:
		return "expression too large";
	default:
		return "regexp/syntax: internal error";
	}
}

static void set_err(char *err, size_t errlen, const char *what,
		    const std::string &arg)
{
	if (err && errlen)
		snprintf(err, errlen, "error parsing regexp: %s: `%s`", what,
			 arg.c_str());
}

/*
 * Copies p into out with Go's syntax brought to RE2's (the file comment).
 * -EINVAL with the message for \C.
 */
static int prescan(const std::string &p, std::string &out, char *err,
		   size_t errlen)
{
	std::set<std::string> names;
	size_t i = 0, n = p.size();
	bool inclass = false;

	out.clear();
	out.reserve(n);
	while (i < n) {
		char c = p[i];

		if (c == '\\' && i + 1 < n) {
			char e = p[i + 1];

			if (e == 'C') {
				set_err(err, errlen, "invalid escape sequence",
					"\\C");
				return -EINVAL;
			}
			if (e == 'Q' && !inclass) {
				size_t end = p.find("\\E", i + 2);

				end = end == std::string::npos ? n : end + 2;
				out.append(p, i, end - i);
				i = end;
				continue;
			}
			out.append(p, i, 2);
			i += 2;
			continue;
		}
		if (inclass) {
			if (c == '[' && i + 1 < n && p[i + 1] == ':') {
				size_t end = p.find(":]", i + 2);

				if (end != std::string::npos) {
					out.append(p, i, end + 2 - i);
					i = end + 2;
					continue;
				}
			}
			if (c == ']')
				inclass = false;
			out += c;
			i++;
			continue;
		}
		if (c == '[') {
			size_t start = i++;

			inclass = true;
			if (i < n && p[i] == '^')
				i++;
			if (i < n && p[i] == ']')
				i++; /* a leading ] is a member */
			out.append(p, start, i - start);
			continue;
		}
		if (c == '(' && p.compare(i, 4, "(?P<") == 0) {
			size_t close = p.find('>', i + 4);

			if (close != std::string::npos) {
				std::string name =
					p.substr(i + 4, close - i - 4);

				if (!names.insert(name).second) {
					out += '('; /* a repeated name */
					i = close + 1;
					continue;
				}
			}
		}
		out += c;
		i++;
	}
	return 0;
}

/* The offset of the first byte of s that starts no UTF-8 sequence, or
 * its length. */
static size_t first_invalid(const std::string &s)
{
	const unsigned char *p = (const unsigned char *)s.data();
	size_t i = 0, n = s.size();

	while (i < n) {
		size_t l = p[i] < 0x80 ? 1 : gw_utf8_len(p + i, n - i, nullptr);

		if (!l)
			break;
		i += l;
	}
	return i;
}

/* Compiles text; -EINVAL with Go's message, -ENOMEM. */
static int compile(const std::string &text, re2::RE2 **out, char *err,
		   size_t errlen)
{
	re2::RE2::Options opt;
	re2::RE2 *re;

	/* RE2's default budget (8 MiB for the program and the DFA cache
	 * together) is kept: it bounds what one pattern costs the agent. */
	opt.set_log_errors(false);
	opt.set_encoding(re2::RE2::Options::EncodingUTF8);
	re = new (std::nothrow) re2::RE2(text, opt);
	if (!re)
		return -ENOMEM;
	if (!re->ok()) {
		std::string arg = re->error_arg();

		/* Go quotes the text from the bad byte on; RE2 nothing. */
		if (re->error_code() == re2::RE2::ErrorBadUTF8)
			arg = text.substr(first_invalid(text));
		if (re->error_code() == re2::RE2::ErrorPatternTooLarge)
			arg = text;
		set_err(err, errlen, go_error(re->error_code()), arg);
		delete re;
		return -EINVAL;
	}
	*out = re;
	return 0;
}

int gw_regex_new(struct gw_regex **out, const char *pattern, size_t len,
		 unsigned flags, char *err, size_t errlen)
{
	re2::RE2 *alone = nullptr;
	struct gw_regex *r = nullptr;
	int rc;

	*out = nullptr;
	try {
		std::string p, text;

		rc = prescan(std::string(pattern, len), p, err, errlen);
		if (rc)
			return rc;
		r = new gw_regex{ nullptr, 0 };
		/* Prometheus compiles the wrapped text first, then (matchers
		 * only) parses the pattern alone: the errors come in that
		 * order. */
		rc = compile("^(?:" + p + ")$", &r->re, err, errlen);
		if (!rc && (flags & GW_REGEX_MATCHER)) {
			rc = compile(p, &alone, err, errlen);
			delete alone;
		}
		if (rc) {
			delete r->re;
			delete r;
			return rc;
		}
		r->ngroups = r->re->NumberOfCapturingGroups();
	} catch (const std::bad_alloc &) {
		if (r)
			delete r->re;
		delete r;
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

void gw_regex_free(struct gw_regex *re)
{
	if (!re)
		return;
	delete re->re;
	delete re;
}

int gw_regex_groups(const struct gw_regex *re)
{
	return re->ngroups;
}

int gw_regex_group_index(const struct gw_regex *re, const char *name)
{
	const std::map<std::string, int> &m = re->re->NamedCapturingGroups();
	auto it = m.find(name);

	return it == m.end() ? -1 : it->second;
}

/* Whether s holds only well-formed UTF-8 (NUL bytes included). */
static bool valid_utf8(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t l;

		if (p[i] < 0x80) { /* the common case */
			i++;
			continue;
		}
		l = gw_utf8_len(p + i, len - i, nullptr);
		if (!l)
			return false;
		i += l;
	}
	return true;
}

/* s with every byte that starts no UTF-8 sequence replaced by U+FFFD. */
static std::string as_go_reads(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	std::string out;

	out.reserve(len + 16);
	for (size_t i = 0; i < len;) {
		size_t l = gw_utf8_len(p + i, len - i, nullptr);

		if (l) {
			out.append(s + i, l);
			i += l;
		} else {
			out.append("\xef\xbf\xbd");
			i++;
		}
	}
	return out;
}

/* The offset in s of offset off of as_go_reads(s): off is on a boundary
 * between characters, since the patterns cannot split one (no \C). */
static long back_to(const char *s, size_t len, size_t off)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, j = 0;

	while (j < off && i < len) {
		size_t l = gw_utf8_len(p + i, len - i, nullptr);

		i += l ? l : 1;
		j += l ? l : 3;
	}
	return (long)i;
}

bool gw_regex_match(const struct gw_regex *re, const char *s, size_t len)
{
	if (valid_utf8(s, len))
		return re->re->Match(re2::StringPiece(s, len), 0, len,
				     re2::RE2::UNANCHORED, nullptr, 0);
	try {
		std::string t = as_go_reads(s, len);

		return re->re->Match(t, 0, t.size(), re2::RE2::UNANCHORED,
				     nullptr, 0);
	} catch (const std::bad_alloc &) {
		/* Unreachable in practice: values are at most a few KiB.
		 * Read without re-encoding rather than not at all. */
		return re->re->Match(re2::StringPiece(s, len), 0, len,
				     re2::RE2::UNANCHORED, nullptr, 0);
	}
}

int gw_regex_match_groups(const struct gw_regex *re, const char *s, size_t len,
			  struct gw_regex_span *g, size_t ng)
{
	size_t nsub = ng < (size_t)re->ngroups + 1 ? ng : re->ngroups + 1;

	for (size_t i = 0; i < ng; i++)
		g[i].start = g[i].end = -1;
	try {
		bool valid = valid_utf8(s, len);
		std::string t = valid ? std::string() : as_go_reads(s, len);
		re2::StringPiece text =
			valid ? re2::StringPiece(s, len) : re2::StringPiece(t);
		re2::StringPiece *sub = new re2::StringPiece[nsub ? nsub : 1];
		bool ok = re->re->Match(text, 0, text.size(),
					re2::RE2::UNANCHORED, sub, (int)nsub);

		for (size_t i = 0; ok && i < nsub; i++) {
			size_t a, b;

			if (!sub[i].data())
				continue;
			a = (size_t)(sub[i].data() - text.data());
			b = a + sub[i].size();
			g[i].start = valid ? (long)a : back_to(s, len, a);
			g[i].end = valid ? (long)b : back_to(s, len, b);
		}
		delete[] sub;
		return ok ? 1 : 0;
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	}
}
