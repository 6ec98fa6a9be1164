/* SPDX-License-Identifier: MIT */
/*
 * The agent's web page: five views over the agent's own Prometheus API,
 * asked with relative URLs only (api/v1/...), so that the page works
 * behind a proxy, TLS or basic auth in front of the agent.  State (view,
 * time range, choices) lives in the URL's fragment, so a link shows the
 * same moment to a colleague.  Charts are uPlot (vendor/); sparklines and
 * the flame graph are drawn here on canvases.
 */
'use strict';
(function () {
	const API = 'api/v1/';
	const POINTS = 1000; /* points per chart, whatever the range */
	const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800,
		3600, 7200, 10800, 21600, 43200, 86400];
	const COLORS = ['#2f5fd0', '#d0572f', '#1a9c5b', '#9b3fc1', '#c29b00',
		'#0096a8', '#c2185b', '#5d6d7e'];
	const $ = (s) => document.querySelector(s);

	/* el('div', {class: 'x'}, child, 'text') */
	function el(tag, attrs, ...kids) {
		const e = document.createElement(tag);
		for (const k in attrs || {}) {
			if (attrs[k] === undefined || attrs[k] === null)
				continue;
			if (k === 'text')
				e.textContent = attrs[k];
			else if (k.startsWith('on'))
				e.addEventListener(k.slice(2), attrs[k]);
			else
				e.setAttribute(k, attrs[k]);
		}
		for (const c of kids.flat())
			if (c !== null && c !== undefined)
				e.append(c instanceof Node ? c : String(c));
		return e;
	}

	/* ---- the API ---- */

	class ApiError extends Error {
		constructor(status, msg) {
			super(msg);
			this.status = status;
		}
	}

	async function get(path, params) {
		const q = new URLSearchParams();
		for (const k in params || {}) {
			const v = params[k];
			for (const x of Array.isArray(v) ? v : [v])
				q.append(k, x);
		}
		const r = await fetch(API + path + (q.toString() ? '?' + q : ''));
		const ct = r.headers.get('content-type') || '';
		if (!ct.includes('json')) {
			const text = await r.text();
			if (!r.ok)
				throw new ApiError(r.status, text.trim() || r.statusText);
			return text;
		}
		const j = await r.json();
		if (!r.ok || j.status !== 'success')
			throw new ApiError(r.status, j.error || r.statusText);
		return j.data;
	}
	const instant = (query, time) => get('query', { query, time }).then((d) => d.result);
	/* At a step of minutes a chart needs one value per step, not the
	 * 1 s samples under it: the rollup tier (the API's tier, ours) reads
	 * 60 to 3,600 times fewer points and answers the same within a
	 * window (docs/internals/promql.md, "Semantics on rollup tiers").
	 * Finer steps read raw samples, as by default. */
	const tierFor = (step) => (step >= 3600 ? { tier: '1h' } : step >= 120 ? { tier: '1m' } : {});
	const range = (query, start, end, step) =>
		get('query_range', Object.assign({ query, start, end, step }, tierFor(step))).then((d) => d.result);

	/* ---- state in the URL ---- */

	const state = {};
	function readHash() {
		const p = new URLSearchParams(location.hash.slice(1));
		for (const k of Object.keys(state))
			delete state[k];
		for (const [k, v] of p)
			state[k] = v;
		state.view = state.view || 'overview';
	}
	function writeHash(changes) {
		const p = new URLSearchParams(location.hash.slice(1));
		for (const k in changes) {
			if (changes[k] === null || changes[k] === undefined)
				p.delete(k);
			else
				p.set(k, changes[k]);
		}
		location.hash = p.toString();
	}

	/* The range shown: start/end from the URL, else the last `last`
	 * seconds (default 1 h) up to now. */
	function timeRange() {
		const now = Date.now() / 1000;
		let start = parseFloat(state.start), end = parseFloat(state.end);
		if (!(end > start)) {
			const last = parseFloat(state.last) || 3600;
			end = Math.floor(now);
			start = end - last;
		}
		return { start, end, step: stepFor(end - start), live: !(state.end > 0) };
	}
	function stepFor(seconds) {
		const want = seconds / POINTS;
		for (const s of STEPS)
			if (s >= want)
				return s;
		return Math.ceil(want / 86400) * 86400;
	}

	/* ---- formatting ---- */

	function fmt(v, unit) {
		if (v === null || v === undefined || Number.isNaN(v))
			return '–';
		switch (unit) {
		case '%': return (v * 100).toFixed(0) + ' %';
		case 'C': return v.toFixed(0) + ' °C';
		case 'W': return v.toFixed(0) + ' W';
		case 'B': return bytes(v);
		case 'Hz': return (v / 1e6).toFixed(0) + ' MHz';
		case 's': return v < 1 ? (v * 1000).toPrecision(3) + ' ms' : v.toPrecision(3) + ' s';
		default: return Math.abs(v) >= 1e4 || (Math.abs(v) < 0.01 && v !== 0) ?
			v.toExponential(2) : String(+v.toPrecision(4));
		}
	}
	function bytes(v) {
		const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
		let i = 0;
		while (Math.abs(v) >= 1024 && i < u.length - 1) {
			v /= 1024;
			i++;
		}
		return v.toFixed(i ? 1 : 0) + ' ' + u[i];
	}
	const when = (t) => new Date(t * 1000).toLocaleString();
	function ago(t) {
		let s = Math.max(0, Date.now() / 1000 - t);
		if (s < 90) return Math.round(s) + ' s';
		if ((s /= 60) < 90) return Math.round(s) + ' min';
		if ((s /= 60) < 36) return s.toFixed(1) + ' h';
		return (s / 24).toFixed(1) + ' d';
	}
	function labelText(m, skip) {
		return Object.keys(m).filter((k) => !(skip || []).includes(k))
			.map((k) => k + '="' + m[k] + '"').join(', ');
	}

	function banner(msg) {
		const b = $('#banner');
		b.hidden = !msg;
		b.textContent = msg || '';
	}

	/* Marks when the first chart is on the page (bench/web.sh reads it). */
	function firstChart() {
		if (window.performance && !performance.getEntriesByName('gw-first-chart').length)
			performance.mark('gw-first-chart');
	}

	/* ---- sparklines (own canvas code: 60 of them must cost nothing) ---- */

	function sparkline(values, color, lo, hi) {
		const c = el('canvas', { width: 180, height: 40 });
		const g = c.getContext('2d');
		const ys = values.filter((v) => Number.isFinite(v));
		if (ys.length < 2)
			return c;
		lo = lo !== undefined ? lo : Math.min(...ys);
		hi = hi !== undefined ? hi : Math.max(...ys);
		if (hi - lo < 1e-9)
			hi = lo + 1;
		g.strokeStyle = color;
		g.lineWidth = 2;
		g.beginPath();
		values.forEach((v, i) => {
			const x = i / (values.length - 1) * 180;
			const y = 38 - (v - lo) / (hi - lo) * 36;
			if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
		});
		g.stroke();
		return c;
	}

	/* ---- Node overview ---- */

	const TILE = [
		/* key, query, unit, label */
		['util', 'gpuwatch_gpu_utilization_ratio', '%', 'utilisation'],
		['mem', 'gpuwatch_gpu_memory_used_bytes', 'B', 'memory'],
		['memtot', 'gpuwatch_gpu_memory_total_bytes', 'B', null],
		['temp', 'gpuwatch_gpu_temperature_celsius', 'C', 'temperature'],
		['hbm', 'gpuwatch_gpu_memory_temperature_celsius', 'C', 'HBM temp.'],
		['power', 'gpuwatch_gpu_power_watts', 'W', 'power'],
		['plimit', 'gpuwatch_gpu_power_limit_watts', 'W', null],
		['smclk', 'gpuwatch_gpu_clock_hertz{clock="sm"}', 'Hz', 'SM clock'],
		['memclk', 'gpuwatch_gpu_clock_hertz{clock="memory"}', 'Hz', 'mem clock'],
	];
	const SPARK = { util: [0, 1], temp: [], power: [], mem: [] };

	/* Every tile value in one instant query and every sparkline in one
	 * range query (the page's first chart waits for them): the samples
	 * are sorted into the TILE keys here.  Each value shown keeps its own
	 * TILE query in data-q, which gives the same number at the same time. */
	const NAMES = {
		gpuwatch_gpu_info: 'info', gpuwatch_gpu_up: 'up',
		gpuwatch_gpu_utilization_ratio: 'util', gpuwatch_gpu_memory_used_bytes: 'mem',
		gpuwatch_gpu_memory_total_bytes: 'memtot', gpuwatch_gpu_temperature_celsius: 'temp',
		gpuwatch_gpu_memory_temperature_celsius: 'hbm', gpuwatch_gpu_power_watts: 'power',
		gpuwatch_gpu_power_limit_watts: 'plimit', gpuwatch_gpu_clock_hertz: 'clk',
		gpuwatch_gpu_clock_event_active: 'throttle', gpuwatch_gpu_ecc_errors_total: 'ecc',
		gpuwatch_gpu_xid_errors_total: 'xid', gpuwatch_gpu_pcie_link_width: 'pciew',
		gpuwatch_gpu_pcie_link_width_max: 'pciewmax', gpuwatch_gpu_pcie_link_generation: 'pcieg',
		gpuwatch_gpu_pcie_link_generation_max: 'pciegmax',
	};
	const nameRe = (names) => '{__name__=~"' + names.join('|') + '"}';

	async function overview() {
		const t = Math.floor(Date.now() / 1000);
		const sparkNames = Object.keys(NAMES).filter((n) => SPARK[NAMES[n]]);
		const [now, sp] = await Promise.all([
			instant(nameRe(Object.keys(NAMES)), t).catch((e) => e),
			range(nameRe(sparkNames), t - 600, t, 10).catch(() => []),
		]);
		const spark = {};
		for (const k in SPARK)
			spark[k] = sp.filter((x) => NAMES[x.metric.__name__] === k);
		const tiles = $('#tiles');
		tiles.replaceChildren();
		if (now instanceof Error) {
			tiles.append(el('p', { class: 'note err', id: 'no-api' }, 'The query API did not answer: ' + now.message +
				(now.status === 503 ? '. The current readings are still on ' : ''),
				now.status === 503 ? el('a', { href: 'metrics', text: '/metrics' }) : null));
			return;
		}
		const gpus = new Map();
		for (const s of now) {
			const g = s.metric.gpu, v = +s.value[1];
			let k = NAMES[s.metric.__name__];
			if (g === undefined || !k)
				continue;
			if (!gpus.has(g))
				gpus.set(g, { gpu: g, throttle: [], ecc: {}, xid: 0 });
			const o = gpus.get(g);
			if (k === 'throttle') {
				if (v === 1 && s.metric.reason !== 'gpu_idle')
					o.throttle.push(s.metric.reason);
			} else if (k === 'ecc') {
				o.ecc[s.metric.type] = (o.ecc[s.metric.type] || 0) + v;
			} else if (k === 'xid') {
				o.xid += v;
			} else if (k === 'info') {
				o.info = s.metric;
			} else {
				if (k === 'clk')
					k = s.metric.clock === 'sm' ? 'smclk' : s.metric.clock === 'memory' ? 'memclk' : null;
				if (k)
					o[k] = v;
			}
		}
		if (!gpus.size) {
			tiles.append(el('p', { class: 'note', id: 'no-gpu',
				text: 'No GPU reported: the agent has no NVML driver to read (and no --simulate). ' +
					'The runtime and application views still work.' }));
		}
		const order = [...gpus.keys()].sort((a, b) => a - b);
		for (const g of order)
			tiles.append(tile(gpus.get(g), spark, t));
		if (order.length)
			firstChart();
		await processes(t);
	}

	function tile(o, spark, t) {
		const info = o.info || {};
		const down = o.up === 0;
		const v = (key, unit, text) => {
			const q = TILE.find((x) => x[0] === key)[1];
			return el('span', { class: 'v', 'data-q': q, 'data-gpu': o.gpu, 'data-t': t,
				'data-raw': o[key] === undefined ? '' : String(o[key]) }, text || fmt(o[key], unit));
		};
		const line = (key) => {
			const [, , unit, label] = TILE.find((x) => x[0] === key);
			const series = (spark[key] || []).find((s) => s.metric.gpu === o.gpu);
			const vals = series ? series.values.map((p) => +p[1]) : [];
			const r = SPARK[key];
			let text;
			if (key === 'mem')
				text = fmt(o.mem, 'B') + ' / ' + fmt(o.memtot, 'B');
			if (key === 'power')
				text = fmt(o.power, 'W') + ' / ' + fmt(o.plimit, 'W');
			return el('div', { class: 'row' }, el('span', { class: 'k', text: label }),
				v(key, unit, text), sparkline(vals, COLORS[0], r[0], r[1]));
		};
		const ecc = o.ecc.uncorrected || 0, eccc = o.ecc.corrected || 0;
		const pcieOk = !(o.pciew < o.pciewmax) && !(o.pcieg < o.pciegmax);
		const bar = (frac) => el('div', { class: 'bar' },
			el('i', { style: 'width:' + Math.min(100, Math.max(0, frac * 100)).toFixed(0) + '%' }));
		return el('div', { class: 'tile' + (down ? ' down' : ''), 'data-gpu': o.gpu },
			el('h3', {}, 'GPU ' + o.gpu + (down ? ' — lost' : ''),
				el('small', { text: (info.name || '') + ' ' + (info.pci_bus_id || '') })),
			line('util'), bar(o.util || 0),
			line('mem'), bar(o.memtot ? o.mem / o.memtot : 0),
			line('temp'),
			el('div', { class: 'row' }, el('span', { class: 'k', text: 'HBM temp.' }), v('hbm', 'C')),
			line('power'), bar(o.plimit ? o.power / o.plimit : 0),
			el('div', { class: 'row' }, el('span', { class: 'k', text: 'clocks' }),
				el('span', {}, v('smclk', 'Hz'), ' SM · ', v('memclk', 'Hz'), ' mem')),
			el('div', { class: 'row' }, el('span', { class: 'k', text: 'throttle' }),
				el('span', { class: o.throttle.length ? 'warn' : 'good', 'data-k': 'throttle',
					text: o.throttle.length ? o.throttle.join(', ') : 'none' })),
			el('div', { class: 'row' }, el('span', { class: 'k', text: 'health' }),
				el('span', {},
					el('span', { class: ecc ? 'bad' : 'good', text: 'ECC ' + ecc + ' unc. / ' + eccc + ' corr.' }), ' · ',
					el('span', { class: o.xid ? 'bad' : 'good', text: 'XID ' + (o.xid || 0) }), ' · ',
					el('span', { class: pcieOk ? 'good' : 'warn',
						text: 'PCIe ' + (o.pcieg ? 'gen' + o.pcieg + ' x' + o.pciew : '–') +
							(pcieOk ? '' : ' (max gen' + o.pciegmax + ' x' + o.pciewmax + ')') }))));
	}

	async function processes(t) {
		const qs = {
			mem: 'gpuwatch_gpu_process_memory_used_bytes',
			sm: 'gpuwatch_gpu_process_sm_utilization_ratio',
			calls: 'sum by (pid) (rate(gpuwatch_cuda_api_calls_total[1m]))',
			errs: 'sum by (pid) (rate(gpuwatch_cuda_api_errors_total[1m]))',
		};
		const r = {};
		await Promise.all(Object.keys(qs).map((k) =>
			instant(qs[k], t).then((x) => { r[k] = x; }, () => { r[k] = []; })));
		const pid = (k, p) => (r[k].find((s) => s.metric.pid === p) || { value: [0, NaN] }).value[1];
		const rows = r.mem.map((s) => {
			const m = s.metric;
			return el('tr', { 'data-pid': m.pid },
				el('td', { text: m.gpu }), el('td', { text: m.pid }), el('td', { text: m.comm || '' }),
				el('td', { text: fmt(+s.value[1], 'B') }), el('td', { text: fmt(+pid('sm', m.pid), '%') }),
				el('td', { text: fmt(+pid('calls', m.pid)) }),
				el('td', { class: +pid('errs', m.pid) > 0 ? 'bad' : '', text: fmt(+pid('errs', m.pid)) }),
				el('td', { text: m.pod_uid || m.container_id || '' }), el('td', { text: m.job || '' }));
		});
		const box = $('#procs');
		if (!rows.length) {
			box.replaceChildren(el('p', { class: 'note', text: 'No GPU processes running.' }));
			return;
		}
		box.replaceChildren(el('table', {},
			el('tr', {}, ...['GPU', 'pid', 'command', 'GPU memory', 'SM', 'API calls/s', 'API errors/s', 'pod / container', 'job']
				.map((h) => el('th', { text: h }))), rows));
	}

	/* ---- charts ---- */

	const charts = [];
	function dropCharts() {
		while (charts.length)
			charts.pop().destroy();
	}

	/* Aligns Prometheus matrices on one time axis [start, end] by step. */
	function align(results, tr) {
		const n = Math.floor((tr.end - tr.start) / tr.step) + 1;
		const xs = Array.from({ length: n }, (_, i) => tr.start + i * tr.step);
		const ys = results.map((s) => {
			const a = new Array(n).fill(null);
			for (const [t, v] of s.values) {
				const i = Math.round((t - tr.start) / tr.step);
				if (i >= 0 && i < n)
					a[i] = +v;
			}
			return a;
		});
		return [xs, ys];
	}

	/* Alert spans drawn across every lane. */
	let spans = [];
	function spanPlugin() {
		return {
			hooks: {
				drawClear: (u) => {
					const g = u.ctx;
					g.save();
					for (const s of spans) {
						const x0 = u.valToPos(s.from, 'x', true), x1 = u.valToPos(s.to, 'x', true);
						g.fillStyle = s.state === 'firing' ? 'rgba(198,40,40,0.07)' : 'rgba(178,107,0,0.06)';
						g.fillRect(x0, u.bbox.top, Math.max(2, x1 - x0), u.bbox.height);
					}
					g.restore();
				},
			},
		};
	}

	function zoomTo(u) {
		const s = u.select;
		if (s.width < 5)
			return;
		const a = u.posToVal(s.left, 'x'), b = u.posToVal(s.left + s.width, 'x');
		writeHash({ start: Math.floor(a), end: Math.ceil(b), last: null });
	}

	function lane(box, title, xs, series, opts) {
		opts = opts || {};
		const div = el('div', { class: 'lane', 'data-lane': opts.id || title });
		div.append(el('h3', { text: title }));
		box.append(div);
		if (!series.length) {
			div.append(el('p', { class: 'note', text: opts.empty || 'no data in this range' }));
			return null;
		}
		const width = Math.max(400, $('main').clientWidth - 40);
		/* an axis only for a scale that a series uses */
		const used = new Set(series.map((s) => s.opts.scale || 'y'));
		const axes = (opts.axes || [{}, {}]).map((a, i) => {
			if (i === 1 && !used.has(a.scale || 'y'))
				return Object.assign({}, a, { scale: series[0].opts.scale || 'y' });
			return a;
		}).filter((a, i) => i < 2 || used.has(a.scale));
		/* the same plot box in every lane: fixed axis widths, and a blank
		 * right axis where the lane has no second scale */
		axes[1] = Object.assign({ size: 70 }, axes[1]);
		if (axes.length < 3)
			axes.push({ scale: axes[1].scale || 'y', side: 1, size: 70, grid: { show: false },
				ticks: { show: false }, values: (u, v) => v.map(() => '') });
		else
			axes[2] = Object.assign({ size: 70 }, axes[2]);
		const u = new uPlot({
			width, height: opts.height || 160,
			cursor: { drag: { x: true, y: false, setScale: false }, sync: { key: 'gw' } },
			select: { show: true },
			legend: { live: true },
			plugins: opts.noSpans ? [] : [spanPlugin()],
			scales: Object.assign({ x: { time: true } }, opts.scales || {}),
			axes,
			series: [{}].concat(series.map((s) => s.opts)),
			bands: opts.bands,
			hooks: { setSelect: [opts.onSelect || zoomTo] },
		}, [xs].concat(series.map((s) => s.data)), div);
		charts.push(u);
		firstChart();
		div.dataset.points = String(xs.length);
		return u;
	}

	/* ---- Timeline ---- */

	async function appNames() {
		const names = await get('label/__name__/values').catch(() => []);
		return names.filter((n) => !/^(gpuwatch_|DCGM_|ALERTS|process_cpu)/.test(n) && !n.includes(':') &&
			!/_(bucket|sum|count|created|timestamp_seconds)$/.test(n) && !n.startsWith('go_') && !n.startsWith('up'));
	}

	async function alertSpans(tr) {
		const r = await range('ALERTS', tr.start, tr.end, tr.step).catch(() => []);
		const out = [];
		for (const s of r) {
			let from = null, last = null;
			const push = () => out.push({ name: s.metric.alertname, state: s.metric.alertstate,
				labels: s.metric, from, to: last + tr.step });
			for (const [t] of s.values) {
				if (from !== null && t - last > tr.step * 1.5) {
					push();
					from = null;
				}
				if (from === null)
					from = t;
				last = t;
			}
			if (from !== null)
				push();
		}
		return out;
	}

	async function timeline() {
		const tr = timeRange();
		const W = '[' + Math.max(tr.step * 2, 60) + 's]';
		const S = '[' + Math.max(tr.step, 2) + 's]';
		const gpu = state.gpu || '0';
		const base = state.base || 'gpuwatch_gpu_temperature_celsius';
		const sel = base + '{gpu="' + gpu + '"}';
		const q = {
			temp: 'max by (gpu) (gpuwatch_gpu_temperature_celsius)',
			xid: 'sum(increase(gpuwatch_gpu_xid_errors_total' + S + ')) > 0',
			ecc: 'sum(increase(gpuwatch_gpu_ecc_errors_total' + S + ')) > 0',
			thr: 'count(max_over_time(gpuwatch_gpu_clock_event_active{reason!="gpu_idle"}' + S + ') == 1)',
			kern: 'sum(rate(gpuwatch_cuda_kernel_duration_seconds_sum' + W + '))',
			apierr: 'sum(rate(gpuwatch_cuda_api_errors_total' + W + '))',
			alloc: 'sum(gpuwatch_cuda_memory_live_bytes) or sum(gpuwatch_cuda_memory_allocated_bytes)',
			raw: sel,
		};
		const r = {};
		let failed = null;
		const names = appNames();
		/* the agent's own detector replayed over the history (its band,
		 * scores and episodes), asked beside the range queries */
		const band = get('baseline', { query: sel, start: tr.start, end: tr.end, step: tr.step })
			.catch((e) => { failed = failed || e; return null; });
		const lanes = Promise.all(Object.keys(q).map((k) => range(q[k], tr.start, tr.end, tr.step)
			.then((x) => { r[k] = x; }, (e) => { r[k] = []; failed = failed || e; })));
		/* everything at once: the agent runs them on its query workers */
		const spansNow = alertSpans(tr);
		const appsNow = names.then((n) => {
			const apps = n.slice(0, 6);
			return Promise.all(apps.map((x) => range(x, tr.start, tr.end, tr.step).catch(() => [])))
				.then((res) => ({ apps, res }));
		});
		await lanes;
		spans = await spansNow;
		const { apps, res: appRes } = await appsNow;

		dropCharts();
		const box = $('#lanes');
		box.replaceChildren();
		banner(failed ? 'History unavailable: ' + failed.message : '');
		const [xs] = align([], tr);
		const lineOpts = (label, i, scale) => ({ label, stroke: COLORS[i % COLORS.length], width: 1.5, scale: scale || 'y', spanGaps: false });
		const pointOpts = (label, color) => ({ label, stroke: color, fill: color, width: 0, scale: 'ev',
			paths: () => null, points: { show: true, size: 9, fill: color } });

		/* hardware */
		const hw = [];
		const [, temps] = align(r.temp, tr);
		r.temp.forEach((s, i) => hw.push({ opts: lineOpts('GPU ' + s.metric.gpu + ' °C', i), data: temps[i] }));
		for (const [k, label, color] of [['xid', 'XID', '#c62828'], ['ecc', 'ECC errors', '#8e24aa'], ['thr', 'throttled GPUs', '#b26b00']]) {
			if (!r[k].length)
				continue;
			const [, d] = align(r[k], tr);
			hw.push({ opts: pointOpts(label, color), data: d[0] });
		}
		lane(box, 'Hardware: temperature, XID, ECC and throttling events', xs, hw, {
			id: 'hardware', empty: 'No GPU hardware data (no NVML driver, no --simulate, or nothing stored in this range).',
			scales: { ev: { range: (u, a, b) => [0, Math.max(1, b) * 1.2] } },
			axes: [{}, { values: (u, v) => v.map((x) => x + ' °C') }, { scale: 'ev', side: 1, grid: { show: false } }],
		});

		/* runtime */
		const rt = [];
		for (const [k, label, scale] of [['kern', 'kernel time (s/s)', 'y'], ['apierr', 'API errors/s', 'y'], ['alloc', 'GPU memory allocated', 'b']]) {
			if (!r[k].length)
				continue;
			const [, d] = align(r[k], tr);
			rt.push({ opts: lineOpts(label, rt.length, scale), data: d[0] });
		}
		lane(box, 'CUDA runtime: kernel time, API errors, allocations', xs, rt, {
			id: 'runtime', empty: 'No CUDA runtime data: no process was traced in this range (CUPTI injection or eBPF off, or no GPU process).',
			axes: [{}, {}, { scale: 'b', side: 1, grid: { show: false }, values: (u, v) => v.map((x) => bytes(x)) }],
		});

		/* application */
		const ap = [];
		appRes.forEach((res, j) => res.slice(0, 3).forEach((s) => {
			const [, d] = align([s], tr);
			const extra = labelText(s.metric, ['__name__', 'job', 'instance']);
			ap.push({ opts: lineOpts(apps[j] + (extra ? '{' + extra + '}' : ''), ap.length, 's' + j), data: d[0] });
		}));
		lane(box, 'Application: training and inference metrics (StatsD)', xs, ap, {
			id: 'application', empty: 'No application metrics: nothing was sent to the StatsD listener in this range.',
			axes: [{}, { scale: 's0' }],
		});

		/* the agent's dynamic baseline (api/v1/baseline): the band a
		 * sample must leave to score the detector's threshold, and the
		 * samples that did */
		const bl = [];
		const b = await band;
		const thr = b ? +b.threshold : 0.9;
		if (r.raw.length) {
			const [, d] = align([r.raw[0]], tr);
			const s0 = b && b.result.length ? b.result[0] : null;
			const col = (k) => (s0 ? align([{ values: s0[k] }], tr)[1][0] : new Array(xs.length).fill(null));
			const up = col('upper'), lo = col('lower'), ex = col('expected'), sc = col('score'), bv = col('values');
			const an = sc.map((v, i) => (v !== null && v >= thr ? bv[i] : null));
			bl.push({ opts: { label: 'baseline upper', stroke: 'rgba(47,95,208,0.3)', width: 1 }, data: up });
			bl.push({ opts: { label: 'baseline lower', stroke: 'rgba(47,95,208,0.3)', width: 1 }, data: lo });
			bl.push({ opts: { label: 'expected', stroke: 'rgba(47,95,208,0.6)', width: 1, dash: [4, 3] }, data: ex });
			bl.push({ opts: lineOpts(base + ' GPU ' + gpu, 1), data: d[0] });
			bl.push({ opts: { label: 'anomaly', stroke: '#c62828', width: 0, paths: () => null,
				points: { show: true, size: 8, fill: '#c62828' } }, data: an });
			box.dataset.anomalies = String(an.filter((v) => v !== null).length);
			box.dataset.episodes = String(s0 ? s0.episodes.length : 0);
			const drawn = up.map((v, i) => [xs[i], lo[i], v]).filter((p) => p[2] !== null);
			box.dataset.bandPoints = String(drawn.length);
			box.dataset.bandRange = [tr.start, tr.end, tr.step].join(',');
			box.dataset.band = JSON.stringify(drawn.filter((p, i) => i % Math.max(1, drawn.length >> 2) === 0));
		}
		const pick = el('form', { id: 'base-form' },
			el('label', {}, 'baseline of ', baseSelect(base)), el('label', {}, ' GPU ', gpuInput(gpu)));
		box.append(pick);
		lane(box, 'Dynamic baseline (the agent\'s detector, band at score ' + thr + ') with anomalies', xs, bl, {
			id: 'baseline', empty: 'No samples of ' + sel + ' in this range (store off, or no such GPU).',
			bands: [{ series: [1, 2], fill: 'rgba(47,95,208,0.12)' }],
		});
		drawStrip(tr);
	}

	function baseSelect(cur) {
		const s = el('select', { name: 'base', onchange: (e) => writeHash({ base: e.target.value }) });
		for (const n of ['gpuwatch_gpu_temperature_celsius', 'gpuwatch_gpu_memory_temperature_celsius',
			'gpuwatch_gpu_power_watts', 'gpuwatch_gpu_utilization_ratio', 'gpuwatch_gpu_memory_used_bytes'])
			s.append(el('option', { value: n, selected: n === cur ? '' : null, text: n }));
		return s;
	}
	function gpuInput(cur, name) {
		return el('input', { name: name || 'gpu', size: 3, value: cur,
			onchange: (e) => writeHash({ [name || 'gpu']: e.target.value }) });
	}

	/* The firing and pending spans as labelled bars over the lanes. */
	function drawStrip(tr) {
		const strip = $('#alert-strip');
		strip.replaceChildren();
		const rows = new Map();
		for (const s of spans) {
			const key = s.name + s.state;
			if (!rows.has(key))
				rows.set(key, rows.size);
		}
		strip.style.height = (rows.size * 18 + (rows.size ? 4 : 0)) + 'px';
		/* over the plot area of the first chart (all lanes share the axis) */
		let left = 60, width = Math.max(400, $('main').clientWidth - 40) - left - 10;
		if (charts.length) {
			/* the plot box is in canvas pixels; the layout may not be done */
			const u = charts[0], px = uPlot.pxRatio || devicePixelRatio;
			left = u.root.getBoundingClientRect().left - strip.getBoundingClientRect().left + u.bbox.left / px;
			width = u.bbox.width / px;
		}
		for (const s of spans) {
			const x0 = Math.max(0, (s.from - tr.start) / (tr.end - tr.start));
			const x1 = Math.min(1, (s.to - tr.start) / (tr.end - tr.start));
			strip.append(el('div', {
				class: 'alert-span ' + s.state, 'data-alertname': s.name, 'data-state': s.state,
				title: s.name + ' (' + s.state + ') ' + labelText(s.labels, ['__name__', 'alertname', 'alertstate']) +
					'\n' + when(s.from) + ' – ' + when(s.to),
				style: 'left:' + (left + x0 * width).toFixed(0) + 'px;width:' + Math.max(4, (x1 - x0) * width).toFixed(0) +
					'px;top:' + rows.get(s.name + s.state) * 18 + 'px',
				text: s.name + (s.labels.gpu !== undefined ? ' gpu ' + s.labels.gpu : ''),
			}));
		}
	}

	/* ---- Compare ---- */

	const CMP = [
		['gpuwatch_gpu_utilization_ratio', '%', 'utilisation'],
		['gpuwatch_gpu_temperature_celsius', 'C', 'temperature'],
		['gpuwatch_gpu_power_watts', 'W', 'power'],
		['gpuwatch_gpu_memory_used_bytes', 'B', 'memory used'],
		['gpuwatch_gpu_clock_hertz{clock="sm"}', 'Hz', 'SM clock'],
		['gpuwatch_gpu_process_memory_used_bytes', 'B', 'process GPU memory'],
		['gpuwatch_gpu_process_sm_utilization_ratio', '%', 'process SM use'],
	];
	function stats(a) {
		const v = a.filter((x) => x !== null).sort((x, y) => x - y);
		if (!v.length)
			return null;
		return { mean: v.reduce((s, x) => s + x, 0) / v.length, p95: v[Math.min(v.length - 1, Math.floor(v.length * 0.95))], max: v[v.length - 1] };
	}
	/* avg(q) over the series of one GPU and/or one process (pid) */
	function sel(q, gpu, pid) {
		const m = [];
		if (gpu !== '' && gpu !== undefined)
			m.push('gpu="' + gpu + '"');
		if (pid !== '' && pid !== undefined)
			m.push('pid="' + pid + '"');
		if (!m.length)
			return 'avg(' + q + ')';
		return 'avg(' + (q.includes('{') ? q.replace('{', '{' + m.join(',') + ',') : q + '{' + m.join(',') + '}') + ')';
	}

	async function compare() {
		const tr = timeRange();
		const dur = tr.end - tr.start;
		const shift = parseFloat(state.shift) || dur;
		const trB = { start: tr.start - shift, end: tr.end - shift, step: tr.step };
		const ga = state.ga || '', gb = state.gb !== undefined ? state.gb : ga;
		const pa = state.pa || '', pb = state.pb !== undefined ? state.pb : pa;
		const metric = state.metric || CMP[0][0];
		const form = $('#cmp-form');
		const ms = el('select', { name: 'metric', onchange: (e) => writeHash({ metric: e.target.value }) });
		for (const [q, , label] of CMP)
			ms.append(el('option', { value: q, selected: q === metric ? '' : null, text: label }));
		const ss = el('select', { name: 'shift', onchange: (e) => writeHash({ shift: e.target.value }) });
		for (const [v, label] of [[dur, 'the window before'], [3600, '1 h earlier'], [86400, '1 day earlier'], [604800, '1 week earlier']])
			ss.append(el('option', { value: v, selected: v === shift ? '' : null, text: label }));
		form.replaceChildren(el('label', {}, 'metric ', ms),
			el('label', {}, 'A: this window, GPU ', gpuInput(ga, 'ga'), ' pid ', gpuInput(pa, 'pa')),
			el('label', {}, ' B: ', ss, ', GPU ', gpuInput(gb, 'gb'), ' pid ', gpuInput(pb, 'pb')),
			el('span', { class: 'note', text: 'empty = mean of all GPUs (processes)' }));

		/* The chart needs the shown metric's two windows only: asked
		 * first (the agent's query workers take them in order) and drawn
		 * as soon as they answer; the table's other twelve follow. */
		const ask = (q) => Promise.all([
			range(sel(q, ga, pa), tr.start, tr.end, tr.step).catch(() => []),
			range(sel(q, gb, pb), trB.start, trB.end, trB.step).catch(() => []),
		]);
		const known = CMP.some(([q]) => q === metric);
		const first = ask(known ? metric : CMP[0][0]);
		const pending = CMP.map(([q]) => (q === (known ? metric : CMP[0][0]) ? first : ask(q)));
		const [fa, fb] = await first;
		dropCharts();
		const [xs] = align([], tr);
		const shownRow = CMP.find(([q]) => q === metric) || CMP[0];
		const shown = { a: align(fa, tr)[1][0] || [], b: align(fb, trB)[1][0] || [], unit: shownRow[1], label: shownRow[2] };
		const box = $('#cmp-chart');
		box.replaceChildren();
		const la = 'A ' + when(tr.start) + (ga ? ' GPU ' + ga : '') + (pa ? ' pid ' + pa : '');
		const lb = 'B ' + when(trB.start) + (gb ? ' GPU ' + gb : '') + (pb ? ' pid ' + pb : '');
		const series = shown.a.some((v) => v !== null) || shown.b.some((v) => v !== null) ? [
			{ opts: { label: la, stroke: COLORS[0], width: 1.5 }, data: shown.a },
			{ opts: { label: lb, stroke: COLORS[1], width: 1.5, dash: [6, 3] }, data: shown.b },
		] : [];
		lane(box, shown.label + ': window B overlaid on window A (x: time in A; B is shifted by ' +
			ago(Date.now() / 1000 - shift) + ')', xs, series, {
			id: 'compare', noSpans: true, empty: 'No data in either window.',
			onSelect: zoomTo,
		});
		const all = await Promise.all(pending);
		const rows = [];
		CMP.forEach(([q, unit, label], i) => {
			const a = align(all[i][0], tr)[1][0] || [];
			const b = align(all[i][1], trB)[1][0] || [];
			const sa = stats(a), sb = stats(b);
			const d = sa && sb && sb.mean ? (sa.mean - sb.mean) / Math.abs(sb.mean) : null;
			rows.push(el('tr', { 'data-metric': q, class: d !== null && Math.abs(d) > 0.1 ? 'warn' : '' },
				el('td', { text: label }),
				el('td', { text: sa ? fmt(sa.mean, unit) : '–' }), el('td', { text: sb ? fmt(sb.mean, unit) : '–' }),
				el('td', { text: d === null ? '–' : (d > 0 ? '+' : '') + (d * 100).toFixed(1) + ' %' }),
				el('td', { text: sa ? fmt(sa.p95, unit) : '–' }), el('td', { text: sb ? fmt(sb.p95, unit) : '–' }),
				el('td', { text: sa ? fmt(sa.max, unit) : '–' }), el('td', { text: sb ? fmt(sb.max, unit) : '–' })));
		});
		$('#cmp-summary').replaceChildren(el('h2', { text: 'Differences (A against B)' }), el('table', {},
			el('tr', {}, ...['', 'mean A', 'mean B', 'Δ mean', 'p95 A', 'p95 B', 'max A', 'max B'].map((h) => el('th', { text: h }))),
			rows));
	}

	/* ---- Profile ---- */

	function parseFolded(text) {
		const root = { name: 'all', value: 0, base: 0, kids: new Map() };
		for (const line of text.split('\n')) {
			const m = /^(.*\S)\s+(-?\d+)(?:\s+(-?\d+))?\s*$/.exec(line);
			if (!m)
				continue;
			/* "stack N" or, from a differential, "stack BASE TARGET" */
			const base = m[3] !== undefined ? +m[2] : 0;
			const n = m[3] !== undefined ? +m[3] : +m[2];
			let node = root;
			root.value += n;
			root.base += base;
			for (const f of m[1].split(';')) {
				if (!node.kids.has(f))
					node.kids.set(f, { name: f, value: 0, base: 0, kids: new Map() });
				node = node.kids.get(f);
				node.value += n;
				node.base += base;
			}
		}
		return root;
	}
	/* Adds base's counts into tree (both parsed) for the differential. */
	function mergeBase(tree, base) {
		tree.base = base.value;
		for (const [name, b] of base.kids) {
			if (!tree.kids.has(name))
				tree.kids.set(name, { name, value: 0, base: 0, kids: new Map() });
			mergeBase(tree.kids.get(name), b);
		}
	}

	let flame = null;
	function drawFlame(root, focus, diff) {
		const c = $('#flame');
		const W = Math.max(400, $('main').clientWidth - 40), H = 18;
		const depth = (n) => 1 + Math.max(0, ...[...n.kids.values()].map(depth));
		const rows = depth(focus);
		c.width = W * devicePixelRatio;
		c.height = rows * H * devicePixelRatio;
		c.style.height = rows * H + 'px';
		const g = c.getContext('2d');
		g.scale(devicePixelRatio, devicePixelRatio);
		g.font = '12px monospace';
		g.textBaseline = 'middle';
		const boxes = [];
		const total = focus.value || 1, totalBase = root.base || 1, totalT = root.value || 1;
		const colour = (n) => {
			if (diff) {
				const d = n.value / totalT - n.base / totalBase;
				const k = Math.min(1, Math.abs(d) * 8);
				return d >= 0 ? 'rgb(255,' + Math.round(230 - 150 * k) + ',' + Math.round(230 - 150 * k) + ')' :
					'rgb(' + Math.round(230 - 150 * k) + ',' + Math.round(230 - 150 * k) + ',255)';
			}
			let h = 0;
			for (const ch of n.name)
				h = (h * 31 + ch.charCodeAt(0)) >>> 0;
			return 'hsl(' + (20 + h % 35) + ',85%,' + (55 + h % 15) + '%)';
		};
		const walk = (n, x, d) => {
			const w = n.value / total * W;
			if (w < 0.5)
				return;
			const y = (rows - 1 - d) * H; /* root at the bottom */
			g.fillStyle = colour(n);
			g.fillRect(x, y, w - 0.5, H - 1);
			if (w > 30) {
				g.fillStyle = '#222';
				g.fillText(n.name.slice(0, Math.floor(w / 7.3)), x + 3, y + H / 2);
			}
			boxes.push({ x, y, w, n });
			let cx = x;
			for (const k of [...n.kids.values()].sort((a, b) => a.name < b.name ? -1 : 1)) {
				walk(k, cx, d + 1);
				cx += k.value / total * W;
			}
		};
		walk(focus, 0, 0);
		flame = { root, boxes, diff };
		c.dataset.frames = String(boxes.length);
		c.dataset.samples = String(root.value);
	}

	function flameAt(ev) {
		if (!flame)
			return null;
		const r = $('#flame').getBoundingClientRect();
		const x = ev.clientX - r.left, y = ev.clientY - r.top;
		return flame.boxes.find((b) => x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + 18);
	}

	async function profileAvailable() {
		const t = Math.floor(Date.now() / 1000);
		try {
			await get('profile', { 'match[]': 'process_cpu', start: t - 60, end: t, format: 'folded' });
			return true;
		} catch (e) {
			return !(e.status === 503 || e.status === 404);
		}
	}

	async function profile() {
		const tr = timeRange();
		const match = state.match || 'process_cpu';
		const diff = state.diff === '1';
		const shift = parseFloat(state.shift) || (tr.end - tr.start);
		const form = $('#prof-form');
		form.replaceChildren(
			el('label', {}, 'processes ', el('input', { name: 'match', size: 40, value: match,
				onchange: (e) => writeHash({ match: e.target.value }) })),
			el('label', {}, el('input', { type: 'checkbox', name: 'diff', checked: diff ? '' : null,
				onchange: (e) => writeHash({ diff: e.target.checked ? '1' : null }) }),
			' differential against the window before (red: more time now, blue: less)'));
		const info = $('#prof-info');
		let text;
		try {
			text = await get('profile', { 'match[]': match, start: tr.start, end: tr.end, format: 'folded' });
		} catch (e) {
			info.replaceChildren(el('p', { class: 'note err', text: 'No profile: ' + e.message }));
			$('#flame').height = 0;
			return;
		}
		const tree = parseFolded(text);
		if (diff) {
			const base = await get('profile', { 'match[]': match, start: tr.start - shift, end: tr.end - shift, format: 'folded' })
				.catch(() => '');
			mergeBase(tree, parseFolded(base));
		}
		info.replaceChildren(el('p', { class: 'note', text: tree.value ? tree.value + ' samples' +
			(diff ? ' (' + tree.base + ' in the window before)' : '') + '; click a frame to zoom, click the bottom bar to reset.' :
			'No samples in this range for ' + match + '.' }));
		drawFlame(tree, tree, diff);
	}

	/* ---- Alerts ---- */

	async function alerts() {
		const box = $('#alert-list');
		let d;
		try {
			d = await get('alerts');
		} catch (e) {
			box.replaceChildren(el('p', { class: 'note err', text: 'Alerts unavailable: ' + e.message }));
			return;
		}
		const list = d.alerts.filter((a) => a.state !== 'inactive')
			.sort((a, b) => (a.state === 'firing' ? 0 : 1) - (b.state === 'firing' ? 0 : 1) || (a.activeAt < b.activeAt ? -1 : 1));
		$('#alert-count').textContent = list.length ? '(' + list.length + ')' : '';
		if (!list.length) {
			box.replaceChildren(el('p', { class: 'note', id: 'no-alerts', text: 'No alert is firing or pending.' }));
			return;
		}
		box.replaceChildren(el('table', {},
			el('tr', {}, ...['state', 'alert', 'labels', 'annotations', 'since', 'value'].map((h) => el('th', { text: h }))),
			list.map((a) => {
				const t = Date.parse(a.activeAt) / 1000;
				const labels = Object.keys(a.labels).filter((k) => k !== 'alertname')
					.map((k) => el('code', { text: k + '=' + a.labels[k] }));
				const ann = Object.keys(a.annotations || {}).map((k) => el('div', {}, el('b', { text: k + ': ' }), a.annotations[k]));
				return el('tr', { class: 'alert', 'data-alertname': a.labels.alertname, 'data-state': a.state },
					el('td', { class: 'state-' + a.state, text: a.state }),
					el('td', { text: a.labels.alertname }),
					el('td', { class: 'labels' }, labels),
					el('td', {}, ann),
					el('td', { title: when(t), text: when(t) + ' (' + ago(t) + ' ago)' }),
					el('td', { text: fmt(+a.value) }));
			})));
	}

	/* ---- the frame ---- */

	const VIEWS = { overview, timeline, compare, profile, alerts };
	const RANGED = ['timeline', 'compare', 'profile'];
	let timer = null, busy = false, again = false, dragging = false;

	async function render() {
		/* a refresh would rebuild the chart under a drag: wait for it */
		if (dragging) {
			clearTimeout(timer);
			timer = setTimeout(render, 300);
			return;
		}
		if (busy) {
			again = true;
			return;
		}
		busy = true;
		readHash();
		const view = VIEWS[state.view] ? state.view : 'overview';
		for (const a of document.querySelectorAll('#nav a'))
			a.classList.toggle('on', a.dataset.view === view);
		for (const s of document.querySelectorAll('.view'))
			s.classList.toggle('on', s.id === view);
		const rangeBar = $('#range');
		rangeBar.hidden = !RANGED.includes(view);
		const tr = timeRange();
		$('#range-text').textContent = when(tr.start) + ' – ' + when(tr.end) + ' · step ' + tr.step + ' s' + (tr.live ? ' · live' : '');
		const local = new Date((tr.end - new Date().getTimezoneOffset() * 60) * 1000);
		if (document.activeElement !== $('#range-end'))
			$('#range-end').value = local.toISOString().slice(0, 19);
		for (const b of rangeBar.querySelectorAll('[data-range]'))
			b.classList.toggle('on', tr.live && +b.dataset.range === tr.end - tr.start);
		if (view !== 'timeline')
			banner('');
		try {
			await VIEWS[view]();
			document.body.dataset.rendered = view;
			document.body.dataset.renders = String((+document.body.dataset.renders || 0) + 1);
		} catch (e) {
			banner('Could not draw this view: ' + e.message);
		} finally {
			busy = false;
		}
		if (again) {
			again = false;
			render();
			return;
		}
		clearTimeout(timer);
		/* the overview and alerts follow now; ranges follow now when live */
		const period = view === 'overview' || view === 'alerts' ? 2000 : (tr.live ? Math.max(5000, tr.step * 1000) : 0);
		if (period)
			timer = setTimeout(render, period);
	}

	function setup() {
		const rangeBar = $('#range');
		rangeBar.addEventListener('click', (e) => {
			const b = e.target.closest('button');
			if (!b)
				return;
			const tr = timeRange();
			const dur = tr.end - tr.start;
			if (b.dataset.range)
				writeHash({ last: b.dataset.range, start: null, end: null });
			else if (b.dataset.pan)
				writeHash({ start: Math.round(tr.start + dur / 2 * b.dataset.pan), end: Math.round(tr.end + dur / 2 * b.dataset.pan), last: null });
			else if (b.dataset.zoom) {
				const mid = (tr.start + tr.end) / 2;
				writeHash({ start: Math.round(mid - dur), end: Math.round(mid + dur), last: null });
			} else if (b.dataset.live !== undefined)
				writeHash({ last: dur, start: null, end: null });
		});
		/* time travel: the same length of range, ending at a chosen time */
		$('#range-end').addEventListener('change', (e) => {
			const end = Math.floor(new Date(e.target.value).getTime() / 1000);
			const tr = timeRange();
			if (end > 0)
				writeHash({ start: end - (tr.end - tr.start), end, last: null });
		});
		const c = $('#flame');
		c.addEventListener('mousemove', (ev) => {
			const b = flameAt(ev);
			const n = b && b.n;
			$('#flame-tip').textContent = n ? n.name + ' — ' + n.value + ' samples (' +
				(n.value / (flame.root.value || 1) * 100).toFixed(1) + ' %)' +
				(flame.diff ? ', before ' + n.base + ' (' + (n.base / (flame.root.base || 1) * 100).toFixed(1) + ' %)' : '') : '';
		});
		c.addEventListener('click', (ev) => {
			const b = flameAt(ev);
			if (b)
				drawFlame(flame.root, b.n === flame.boxes[0].n ? flame.root : b.n, flame.diff);
		});
		window.addEventListener('hashchange', render);
		/* capture: before uPlot's own handlers, so the selection's render
		 * (setSelect on mouseup) is not held back */
		document.addEventListener('mousedown', (e) => {
			if (e.target.closest && e.target.closest('.u-over'))
				dragging = true;
		}, true);
		window.addEventListener('mouseup', () => { dragging = false; }, true);
		let resized = null;
		window.addEventListener('resize', () => {
			clearTimeout(resized);
			resized = setTimeout(render, 300);
		});
		profileAvailable().then((yes) => { document.querySelector('[data-view=profile]').hidden = !yes; });
		/* the alert count in the menu, whatever the view */
		get('alerts').then((d) => {
			const n = d.alerts.filter((a) => a.state !== 'inactive').length;
			$('#alert-count').textContent = n ? '(' + n + ')' : '';
		}, () => {});
		render();
	}

	if (document.readyState === 'loading')
		document.addEventListener('DOMContentLoaded', setup);
	else
		setup();
})();
