// The agent's web page in a real headless browser (Debian's chromium,
// driven by playwright-core), against a running agent.
//
//   node page.test.mjs URL SHOTS_DIR [PROFILE_URL]
//   node page.test.mjs --no-gpu URL SHOTS_DIR
//
// URL: the agent (simulated GPUs, an ECC storm on GPU 0, its alert
// firing).  SHOTS_DIR: screenshots of each view are written there.
// PROFILE_URL: the same agent behind a proxy that also answers
// /api/v1/profile with a folded fixture, for the flame graph.
// --no-gpu: an agent without any GPU; the page must say so.
// Prints "ok: ..." per check; the first failure exits 1 with its reason.
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';

const args = process.argv.slice(2);
const noGpu = args[0] === '--no-gpu';
if (noGpu)
	args.shift();
const [url, shots, profUrl] = args;
if (!url || !shots) {
	console.error('usage: node page.test.mjs URL SHOTS_DIR [PROFILE_URL]');
	process.exit(2);
}
mkdirSync(shots, { recursive: true });
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const T = 20000; // each wait's deadline

function fail(msg) {
	console.error('FAIL: ' + msg);
	process.exit(1);
}
const ok = (msg) => console.log('ok: ' + msg);
// The page asks the profile endpoint whether profiling is on; its 404 or
// 503 (off) is the answer, not an error, though the browser logs it.
function consoleError(m) {
	if (m.type() !== 'error')
		return;
	if (/^Failed to load resource: .* (404|503)/.test(m.text()) && m.location().url.includes('/api/v1/profile?'))
		return;
	errors.push(m.text() + ' (' + m.location().url + ')');
}

async function api(path) {
	const r = await fetch(url + '/api/v1/' + path);
	const j = await r.json();
	if (j.status !== 'success')
		fail('API ' + path + ': ' + JSON.stringify(j));
	return j.data;
}

const browser = await chromium.launch({ executablePath: CHROMIUM,
	args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
const errors = [];
try {
	const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
	page.on('console', consoleError);
	page.on('pageerror', (e) => errors.push(String(e)));
	page.on('requestfailed', (r) => errors.push('request failed: ' + r.url()));

	if (noGpu) {
		await page.goto(url + '/');
		await page.waitForSelector('#no-gpu', { timeout: T }).catch(() => fail('no "no GPU" note'));
		const note = await page.$eval('#no-gpu', (n) => n.textContent);
		if (await page.$('.tile'))
			fail('a GPU tile without a GPU');
		ok('the overview says: ' + note);
		await page.goto(url + '/#view=timeline&last=900');
		await page.waitForSelector('body[data-rendered=timeline]', { timeout: T });
		const hw = await page.$eval('[data-lane=hardware]', (l) => l.textContent);
		if (!/No GPU hardware data/.test(hw))
			fail('the hardware lane does not say it is empty: ' + hw);
		ok('the timeline says: ' + hw.replace(/^Hardware[^:]*: [^A-Z]*/, ''));
		await page.screenshot({ path: shots + '/no-gpu.png', fullPage: true });
		if (errors.length)
			fail('console errors: ' + errors.join(' | '));
		ok('no console errors');
	} else {
		await fullChecks(page);
	}
} finally {
	await browser.close();
}

async function fullChecks(page) {
	const external = [], baselineAsked = [];
	page.on('request', (r) => {
		if (!r.url().startsWith(url) && !r.url().startsWith('data:'))
			external.push(r.url());
		if (r.url().includes('/api/v1/baseline?'))
			baselineAsked.push(r.url());
	});
	// Node overview: one tile per GPU; each value equals /api/v1/query's
	// at the time the page asked.  The page asks for the current second,
	// whose last sample may still be on its way to the store: a page
	// that differs is loaded again, up to three times.
	let tiles, values;
	for (let attempt = 1; ; attempt++) {
		await page.goto(url + '/');
		await page.waitForSelector('body[data-rendered=overview]', { timeout: T });
		tiles = await page.$$eval('.tile', (t) => t.map((x) => x.dataset.gpu));
		if (tiles.length !== 2)
			fail('expected 2 GPU tiles, got ' + JSON.stringify(tiles));
		values = await page.$$eval('.tile .v[data-q]', (vs) => vs.map((v) => ({
			q: v.dataset.q, gpu: v.dataset.gpu, t: v.dataset.t, raw: v.dataset.raw, text: v.textContent })));
		if (values.length < 7 * tiles.length)
			fail('too few values on the tiles: ' + values.length);
		let differ = null;
		for (const v of values) {
			const res = await api('query?query=' + encodeURIComponent(v.q) + '&time=' + v.t);
			const s = res.result.find((x) => x.metric.gpu === v.gpu);
			if (!s)
				fail(v.q + ' for GPU ' + v.gpu + ' absent from the API but shown as ' + v.text);
			if (+s.value[1] !== +v.raw && !differ)
				differ = `${v.q} GPU ${v.gpu}: tile ${v.raw} ("${v.text}"), API ${s.value[1]}`;
		}
		if (!differ)
			break;
		if (attempt === 3)
			fail(differ + ' (three page loads)');
	}
	ok(`${tiles.length} tiles, ${values.length} values equal to /api/v1/query's`);
	const eccText = await page.$eval('.tile[data-gpu="0"]', (t) => t.textContent);
	if (!/ECC [1-9]\d* unc/.test(eccText))
		fail('GPU 0 tile shows no uncorrected ECC errors: ' + eccText);
	ok('GPU 0 tile shows its uncorrected ECC errors');
	await page.screenshot({ path: shots + '/overview.png', fullPage: true });

	// Alerts: the fault's alert, with labels, annotations and since-when.
	await page.click('nav a[data-view=alerts]');
	await page.waitForSelector('tr.alert[data-alertname=GpuUncorrectedEccErrors][data-state=firing]', { timeout: T });
	const row = await page.$eval('tr.alert[data-alertname=GpuUncorrectedEccErrors]', (r) => r.textContent);
	if (!row.includes('gpu=0') || !row.includes('severity=critical') || !/summary:/.test(row) || !/ago\)/.test(row))
		fail('the alert row lacks labels, annotations or since: ' + row);
	if (/gpu=1\b/.test(await page.$eval('#alert-list', (l) => l.textContent)))
		fail('an alert for the healthy GPU 1');
	ok('the ECC alert is listed as firing with its labels, annotations and since-when');
	await page.screenshot({ path: shots + '/alerts.png', fullPage: true });

	// Timeline: the alert as a span; a selected range goes into the URL
	// and redraws the charts over it.
	await page.click('nav a[data-view=timeline]');
	await page.click('#range button[data-range="900"]');
	await page.waitForFunction(() => document.body.dataset.rendered === 'timeline' &&
		location.hash.includes('last=900') && document.querySelector('[data-lane=hardware] canvas'), null, { timeout: T });
	await page.waitForSelector('#alert-strip .alert-span[data-alertname=GpuUncorrectedEccErrors]', { timeout: T });
	ok('the ECC alert is a span on the timeline');
	for (const l of ['hardware', 'runtime', 'application', 'baseline'])
		if (!await page.$(`[data-lane=${l}]`))
			fail('no ' + l + ' lane');
	const runtimeNote = await page.$eval('[data-lane=runtime]', (l) => l.textContent);
	if (!/No CUDA runtime data/.test(runtimeNote))
		fail('the runtime lane does not say it is empty: ' + runtimeNote);
	if (!await page.$('[data-lane=baseline] canvas'))
		fail('no baseline chart');
	if (!await page.$('[data-lane=application] canvas'))
		fail('no application chart though a training job sends metrics');
	ok('four lanes; the absent runtime layer says so; the application metrics and the baseline band are drawn');
	// The band is the agent's: what /api/v1/baseline answered the page's
	// own request (asked again: the range is fixed, so the band is too).
	if (!baselineAsked.some((u) => u.includes('gpuwatch_gpu_temperature_celsius')))
		fail('the timeline did not ask /api/v1/baseline for its band');
	// (The model learns from its first 64 samples: the band may come with
	// a later redraw.)
	await page.waitForFunction(() => +document.querySelector('#lanes').dataset.bandPoints > 0, null, { timeout: T })
		.catch(() => fail('no band point drawn'));
	const drawn = await page.$eval('#lanes', (b) => ({ n: +b.dataset.bandPoints, pts: JSON.parse(b.dataset.band),
		range: b.dataset.bandRange.split(',') }));
	const bq = new URLSearchParams({ query: 'gpuwatch_gpu_temperature_celsius{gpu="0"}', start: drawn.range[0],
		end: drawn.range[1], step: drawn.range[2] });
	const bj = await (await fetch(url + '/api/v1/baseline?' + bq)).json();
	if (bj.status !== 'success' || !bj.data.result.length)
		fail('/api/v1/baseline?' + bq + ': ' + JSON.stringify(bj).slice(0, 300));
	const lower = new Map(bj.data.result[0].lower.map(([t, v]) => [t, +v]));
	const upper = new Map(bj.data.result[0].upper.map(([t, v]) => [t, +v]));
	for (const [t, lo, hi] of drawn.pts)
		if (lower.get(t) !== lo || upper.get(t) !== hi)
			fail(`the band drawn at ${t} is [${lo}, ${hi}], the endpoint says [${lower.get(t)}, ${upper.get(t)}]`);
	if (Math.abs(upper.size - drawn.n) > 2)
		fail(`${drawn.n} band points drawn, the endpoint has ${upper.size}`);
	ok(`the baseline band is the agent's (${drawn.n} points from /api/v1/baseline)`);
	await page.screenshot({ path: shots + '/timeline.png', fullPage: true });

	const before = await page.evaluate(() => ({ hash: location.hash, pts: document.querySelector('[data-lane=hardware]').dataset.points,
		renders: +document.body.dataset.renders }));
	const box = await page.$eval('[data-lane=hardware] .u-over', (o) => { const r = o.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; });
	await page.mouse.move(box[0] + box[2] * 0.5, box[1] + box[3] / 2);
	await page.mouse.down();
	await page.mouse.move(box[0] + box[2] * 0.7, box[1] + box[3] / 2, { steps: 5 });
	await page.mouse.move(box[0] + box[2] * 0.9, box[1] + box[3] / 2, { steps: 5 });
	await page.mouse.up();
	await page.waitForFunction((r) => /start=\d+/.test(location.hash) && /end=\d+/.test(location.hash) &&
		+document.body.dataset.renders > r, before.renders, { timeout: T });
	const after = await page.evaluate(() => {
		const p = new URLSearchParams(location.hash.slice(1));
		return { start: +p.get('start'), end: +p.get('end'), hash: location.hash, text: document.querySelector('#range-text').textContent };
	});
	if (!(after.end - after.start > 0 && after.end - after.start < 900 * 0.5))
		fail('the dragged range is not in the URL: ' + JSON.stringify(after));
	if (!after.text.includes('step 1 s'))
		fail('the charts were not redrawn at the new range\'s step: ' + after.text);
	ok(`dragging selected ${after.end - after.start} s: URL ${after.hash}, ${after.text}`);
	// The link shows the same range in a new page.
	const p2 = await browser.newPage({ viewport: { width: 1280, height: 900 } });
	p2.on('pageerror', (e) => errors.push(String(e)));
	await p2.goto(url + '/' + after.hash);
	await p2.waitForSelector('body[data-rendered=timeline]', { timeout: T });
	if (await p2.$eval('#range-text', (e) => e.textContent) !== after.text)
		fail('the link does not show the same range');
	await p2.close();
	ok('the link shows the same range in a new page');
	// Time travel: the same length of range, ending at a chosen time.
	const target = after.end - 30;
	await page.evaluate((t) => {
		const i = document.querySelector('#range-end');
		i.value = new Date((t - new Date().getTimezoneOffset() * 60) * 1000).toISOString().slice(0, 19);
		i.dispatchEvent(new Event('change'));
	}, target);
	await page.waitForFunction((t) => location.hash.includes('end=' + t), target, { timeout: T });
	ok('time travel: the range now ends at ' + new Date(target * 1000).toISOString());

	// Compare: two windows overlaid, differences summarised.
	await page.goto(url + '/#view=compare&last=60&shift=20&ga=0&gb=1');
	await page.waitForSelector('body[data-rendered=compare]', { timeout: T });
	await page.waitForSelector('[data-lane=compare] canvas', { timeout: T });
	const legend = await page.$$eval('[data-lane=compare] .u-legend .u-series .u-label', (l) => l.map((x) => x.textContent));
	if (legend.filter((l) => /^[AB] /.test(l)).length !== 2)
		fail('compare does not overlay two windows: ' + JSON.stringify(legend));
	const rows = await page.$$eval('#cmp-summary tr[data-metric]', (r) => r.map((x) => [...x.children].map((c) => c.textContent)));
	if (rows.length < 5 || !rows.some((r) => /%$/.test(r[3])))
		fail('no summary of the differences: ' + JSON.stringify(rows));
	ok('compare overlays ' + legend.join(' and ') + '; ' + rows.length + ' metrics summarised');
	await page.screenshot({ path: shots + '/compare.png', fullPage: true });
	// Two processes: the memory of one against another's.
	const procs = (await api('query?query=gpuwatch_gpu_process_memory_used_bytes')).result.map((r) => r.metric.pid);
	if (procs.length >= 2) {
		await page.goto(url + `/#view=compare&last=60&shift=20&pa=${procs[0]}&pb=${procs[1]}&metric=gpuwatch_gpu_process_memory_used_bytes`);
		await page.waitForFunction((p) => [...document.querySelectorAll('[data-lane=compare] .u-legend .u-label')]
			.filter((l) => l.textContent.endsWith('pid ' + p[0]) || l.textContent.endsWith('pid ' + p[1])).length === 2, procs, { timeout: T });
		const prow = await page.$eval('#cmp-summary tr[data-metric=gpuwatch_gpu_process_memory_used_bytes]', (r) => r.children[3].textContent);
		if (!/%$/.test(prow))
			fail('no difference between the two processes: ' + prow);
		ok(`compare overlays process ${procs[0]} and ${procs[1]}: memory ${prow}`);
	}

	// Profile: hidden while the agent has no profile endpoint (or it is
	// off); behind the fixture proxy, the flame graph.
	const profStatus = (await fetch(url + '/api/v1/profile?match[]=process_cpu&format=folded')).status;
	const hidden = await page.$eval('nav a[data-view=profile]', (a) => a.hidden);
	if ((profStatus === 503 || profStatus === 404) !== hidden)
		fail(`profile tab hidden=${hidden} while the endpoint answers ${profStatus}`);
	ok(`the Profile view is ${hidden ? 'hidden' : 'shown'} (the endpoint answers ${profStatus})`);
	if (profUrl) {
		const pp = await browser.newPage({ viewport: { width: 1280, height: 700 } });
		pp.on('pageerror', (e) => errors.push(String(e)));
		pp.on('console', consoleError);
		await pp.goto(profUrl + '/#view=profile&last=3600');
		await pp.waitForSelector('nav a[data-view=profile]:not([hidden])', { timeout: T });
		await pp.waitForSelector('body[data-rendered=profile]', { timeout: T });
		const f = await pp.$eval('#flame', (c) => ({ frames: +c.dataset.frames, samples: +c.dataset.samples, h: c.height }));
		if (!(f.frames >= 5 && f.samples === 100 && f.h > 0))
			fail('flame graph: ' + JSON.stringify(f));
		ok(`the flame graph draws ${f.frames} frames of ${f.samples} samples`);
		await pp.screenshot({ path: shots + '/profile.png', fullPage: true });
		await pp.click('input[name=diff]');
		await pp.waitForFunction(() => location.hash.includes('diff=1') && /in the window before/.test(document.querySelector('#prof-info').textContent), null, { timeout: T });
		ok('the differential flame graph draws');
		await pp.screenshot({ path: shots + '/profile-diff.png', fullPage: true });
		await pp.close();
	}
	if (external.length)
		fail('requests outside the agent: ' + external.join(' '));
	if (errors.length)
		fail('console errors: ' + errors.join(' | '));
	ok('no console errors, no request outside the agent');
}
