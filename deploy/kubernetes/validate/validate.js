// Validates every document of the Kubernetes manifests given on the command
// line (and the YAML blocks of Markdown files marked ```yaml k8s) against the
// schemas that kubernetes-models and @kubernetes-models/prometheus-operator
// carry, offline.  One line per document; exit 1 when any fails.
//
//   node validate.js FILE...
//
// The schemas allow unknown fields (as the API server does without strict
// field validation): a misspelt optional key passes here.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import * as k8s from "kubernetes-models";
import * as promop from "@kubernetes-models/prometheus-operator";

// apiVersion "group/version" -> the package's export for it.
function lookup(apiVersion, kind) {
	const [group, version] = apiVersion.includes("/")
		? apiVersion.split("/")
		: ["", apiVersion];
	const camel = group
		.split(/[.-]/)
		.map((w, i) => (i ? w[0].toUpperCase() + w.slice(1) : w))
		.join("");
	for (const pkg of [k8s, promop]) {
		const g = group === "" ? pkg : pkg[camel] || pkg[group];
		const v = g && g[version];
		if (v && v[kind]) return v[kind];
	}
	return null;
}

// ```yaml k8s blocks of a Markdown file, each with its line number.
function markdownBlocks(text) {
	const out = [];
	const lines = text.split("\n");
	for (let i = 0; i < lines.length; i++) {
		if (!/^```ya?ml\s+k8s\s*$/.test(lines[i])) continue;
		const start = i + 1;
		let j = start;
		while (j < lines.length && !/^```\s*$/.test(lines[j])) j++;
		out.push({ line: start + 1, text: lines.slice(start, j).join("\n") });
		i = j;
	}
	return out;
}

let failed = 0;
let checked = 0;

function check(file, base, text) {
	const docs = parseAllDocuments(text);
	for (const doc of docs) {
		const line = base + (doc.range ? lineOf(text, doc.range[0]) : 0);
		const where = `${file}:${line}`;
		if (doc.errors.length) {
			console.log(`FAIL ${where}: YAML: ${doc.errors[0].message}`);
			failed++;
			continue;
		}
		const obj = doc.toJS();
		if (obj === null || obj === undefined) continue;
		checked++;
		const name = `${obj.kind || "?"}/${(obj.metadata && obj.metadata.name) || "?"}`;
		if (!obj.apiVersion || !obj.kind) {
			console.log(`FAIL ${where}: ${name}: no apiVersion or kind`);
			failed++;
			continue;
		}
		const Model = lookup(obj.apiVersion, obj.kind);
		if (!Model) {
			console.log(`FAIL ${where}: ${name}: unknown type ${obj.apiVersion} ${obj.kind}`);
			failed++;
			continue;
		}
		try {
			new Model(obj).validate();
		} catch (e) {
			console.log(`FAIL ${where}: ${name}: ${e.message.split("\n")[0]}`);
			failed++;
			continue;
		}
		console.log(`ok   ${where}: ${obj.apiVersion} ${name}`);
	}
}

function lineOf(text, offset) {
	let n = 0;
	for (let i = 0; i < offset && i < text.length; i++) if (text[i] === "\n") n++;
	return n;
}

const files = process.argv.slice(2);
if (!files.length) {
	console.error("usage: node validate.js FILE...");
	process.exit(2);
}
for (const f of files) {
	let text;
	try {
		text = readFileSync(f, "utf8");
	} catch (e) {
		console.log(`FAIL ${f}: ${e.message}`);
		failed++;
		continue;
	}
	if (f.endsWith(".md")) {
		for (const b of markdownBlocks(text)) check(f, b.line, b.text);
	} else {
		check(f, 1, text);
	}
}
console.log(`${checked} documents, ${failed} failed`);
process.exit(failed || !checked ? 1 : 0);
