// The web page's weight and speed (bench/web.sh): for each view, N cold
// loads (a new browser context each, so nothing is cached) in headless
// chromium; prints one line per view with the median and the worst of:
// bytes transferred (the page, its files and every API answer, as the
// browser counts them: headers and compressed bodies), the number of
// requests, and the time from navigation start to the first chart
// (performance mark "gw-first-chart", set by the page).
//
// With DETAIL=1, each view's last run also lists its requests (start and
// end in ms from navigation start, bytes, path), to see what the first
// chart waited for.
//
//   node bench.mjs URL RUNS
import { chromium } from 'playwright-core';

const [url, runsArg] = process.argv.slice(2);
const runs = +runsArg || 5;
const views = [
	['overview', '/'],
	['timeline 24h', '/#view=timeline&last=86400'],
	['timeline 30d', '/#view=timeline&last=2592000'],
	['compare 24h', '/#view=compare&last=86400'],
];
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
	args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log('view           runs  bytes(median)  bytes(max)  requests  first chart ms (median / max)');
for (const [name, path] of views) {
	const bytes = [], ms = [], reqs = [];
	for (let i = 0; i < runs; i++) {
		const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
		const page = await ctx.newPage();
		await page.goto(url + path);
		await page.waitForFunction(() => performance.getEntriesByName('gw-first-chart').length > 0, null, { timeout: 60000 });
		// let every request of the first drawing finish
		await page.waitForFunction(() => document.body.dataset.renders >= 1, null, { timeout: 60000 });
		const r = await page.evaluate(() => {
			const nav = performance.getEntriesByType('navigation')[0];
			const res = performance.getEntriesByType('resource');
			return { ms: performance.getEntriesByName('gw-first-chart')[0].startTime,
				bytes: nav.transferSize + res.reduce((s, e) => s + e.transferSize, 0), reqs: 1 + res.length,
				detail: [nav].concat(res).map((e) => [e.startTime, e.responseEnd, e.transferSize,
					decodeURIComponent(e.name.replace(location.origin, ''))]) };
		});
		bytes.push(r.bytes);
		ms.push(r.ms);
		reqs.push(r.reqs);
		if (process.env.DETAIL && i === runs - 1) {
			console.log(`  ${name}: first chart at ${r.ms.toFixed(0)} ms`);
			for (const [a, b, n, path] of r.detail)
				console.log(`  ${a.toFixed(0).padStart(6)} ${b.toFixed(0).padStart(6)} ${String(n).padStart(7)}  ${path.slice(0, 150)}`);
		}
		await ctx.close();
	}
	console.log(`${name.padEnd(14)} ${String(runs).padStart(4)}  ${String(med(bytes)).padStart(13)}  ${String(Math.max(...bytes)).padStart(10)}  ` +
		`${String(med(reqs)).padStart(8)}  ${med(ms).toFixed(0).padStart(6)} / ${Math.max(...ms).toFixed(0)}`);
}
await browser.close();
