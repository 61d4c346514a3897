/*
 * tests/browser/audit_serve.js: the page of `airlock audit serve` in Debian's
 * chromium (headless), driven by playwright-core; run by
 * tests/integration/audit_serve.t, which starts the servers and reads this
 * script's lines: "PASS\tDESC", "FAIL\tDESC" (a check each), "NOTE\tTEXT".
 *
 * Environment: CHROMIUM (the browser), MAIN (the view of a log of many records),
 * TAMPERED (the view of a copy with line TLINE edited), LOG (the main log), EXPECT
 * (what tests/browser/audit_spec.pl says is in it), ART (the folder for the
 * screenshots), GEN and TAILSPEC (audit_gen and records to append for the tail),
 * SHOT (where to copy the filtered view's screenshot, a record open, or empty).
 */
'use strict';

const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { chromium } = require('playwright-core');

const env = process.env;
let failed = 0;

function check(cond, desc) {
	console.log((cond ? 'PASS\t' : 'FAIL\t') + desc);
	if (!cond)
		failed++;
	return cond;
}

function note(text) {
	console.log('NOTE\t' + text);
}

const expect = {};
for (const line of fs.readFileSync(env.EXPECT, 'utf8').split('\n')) {
	const [k, ...v] = line.split(' ');
	if (k)
		expect[k] = v;
}
const HOST = expect.denied_host[0];
const DENIED = expect.denied.map(Number);
const HOSTILE = expect.hostile.map(Number);
const LINES = fs.readFileSync(env.LOG, 'utf8').split('\n');
const NREC = LINES.length - 1;
const TLINE = Number(env.TLINE);

function hashOf(n, key) {
	return JSON.parse(LINES[n - 1])[key];
}

async function shot(page, name) {
	const file = path.join(env.ART, name);
	await page.screenshot({ path: file, fullPage: false });
	note('screenshot ' + file);
	return file;
}

async function rows(page) {
	return page.$$eval('#records tbody tr', (trs) => trs.map((tr) => ({
		n: Number(tr.dataset.n),
		cls: tr.className,
		dst: tr.querySelector('.c-dst').textContent,
		decision: tr.querySelector('.c-decision').textContent,
		req: tr.querySelector('.c-req').textContent
	})));
}

async function waitTotal(page, n) {
	await page.waitForFunction((want) =>
	    document.querySelector('#count').dataset.total === String(want), n);
}

async function filter(page, fields) {
	await page.click('#clear');
	await page.waitForFunction(() => location.hash === '#' || location.hash === '');
	for (const [name, value] of Object.entries(fields)) {
		if (name === 'decision' || name === 'event' || name === 'hostmode')
			await page.selectOption(`select[name=${name}]`, value);
		else
			await page.fill(`input[name=${name}]`, value);
	}
	await page.click('#filters button[type=submit]');
}

/* Loads n's record in the pane and waits for it. */
async function openRecord(page, n) {
	await page.click(`#records tr[data-n="${n}"]`);
	await page.waitForFunction((want) => {
		const h = document.querySelector('#detail h2');
		return h && h.textContent === 'record ' + want;
	}, n);
}

/*
 * Puts markup into the page as HTML (what a rendering bug would do) and waits for
 * its image's error event: with the server's CSP its inline handler must not run.
 */
async function injectMarkup(page) {
	return page.evaluate(() => new Promise((resolve) => {
		let violations = 0;
		document.addEventListener('securitypolicyviolation', () => violations++);
		const d = document.createElement('div');
		document.body.appendChild(d);
		d.insertAdjacentHTML('beforeend',
		    '<img id="probe" src="/no-such-image.png" onerror="window.__pwned=\'csp\'">');
		const img = document.getElementById('probe');
		img.addEventListener('error', () => setTimeout(() => resolve({
			pwned: window.__pwned === undefined ? null : String(window.__pwned),
			violations: violations
		}), 0));
	}));
}

async function main() {
	const browser = await chromium.launch({
		executablePath: env.CHROMIUM,
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage']
	});
	const context = await browser.newContext({ viewport: { width: 1280, height: 760 } });
	const page = await context.newPage();
	const pageErrors = [];
	page.on('pageerror', (e) => pageErrors.push(e.message));

	/* 1. The page of a large log. */
	const t0 = Date.now();
	await page.goto(env.MAIN);
	await page.waitForSelector('#verify.ok');
	await page.waitForFunction(() =>
	    document.querySelectorAll('#records tbody tr').length === 100);
	note(`load: the view of ${NREC} records usable (chain verdict and the newest ` +
	    `100 rows shown) ${Date.now() - t0} ms after navigation`);
	check(await page.$eval('#count', (e) => e.dataset.total) === String(NREC),
	    `the page counts ${NREC} records`);
	const first = await rows(page);
	check(first[0].n === NREC && first[99].n === NREC - 99,
	    'the first page holds the newest 100, newest first');
	check(/chain ok: \d+ records/.test(await page.textContent('#verify')),
	    'the header says the chain is ok');
	await shot(page, '01-loaded.png');
	check(!(await page.evaluate(() => location.href)).includes('token='),
	    'the token is taken out of the address bar once read');
	/* Without the token (a new tab of the bare address): no record shown. */
	const nt = await context.newPage();
	await nt.goto(env.MAIN.split('#')[0]);
	await nt.waitForSelector('#error:not([hidden])');
	check(await nt.$$eval('#records tbody tr', (r) => r.length) === 0 &&
	    /token/.test(await nt.textContent('#error')),
	    'the bare address without the token: an error naming the token, no rows');
	await nt.close();

	/* 2. One denied host. */
	let t1 = Date.now();
	await filter(page, { host: HOST, decision: 'deny' });
	await waitTotal(page, DENIED.length);
	note(`filter: host ${HOST}, decision deny: answered in ${Date.now() - t1} ms`);
	let got = await rows(page);
	check(got.length === DENIED.length, `filtering to ${HOST} shows ` +
	    `${got.length} rows, the generator made ${DENIED.length} records for it`);
	check(JSON.stringify(got.map((r) => r.n).sort((a, b) => a - b)) ===
	    JSON.stringify(DENIED), '... exactly those records (by number)');
	check(got.every((r) => r.dst.replace(/:443$/, '') === HOST &&
	    r.decision === 'deny'), '... each a denial of that host');
	check(decodeURIComponent(await page.evaluate(() => location.hash)).includes(
	    'host=' + HOST), '... and the filter is in the link (the hash)');
	await shot(page, '02-filtered.png');
	/* The same filter, from a link. */
	const page2 = await context.newPage();
	await page2.goto(env.MAIN + '&host=' + HOST + '&decision=deny');
	await waitTotal(page2, DENIED.length);
	check((await rows(page2)).length === DENIED.length,
	    'a link with the filter in its hash shows the same rows');
	await page2.close();

	/* 3. One record in full: its place in the chain. */
	/* One near the top of the page (newest first), so the picture shows its row. */
	const pick = DENIED[DENIED.length - 6];
	await openRecord(page, pick);
	check((await page.textContent('#chain-seq')) ===
	    `seq ${pick} (record ${pick} of ${NREC})`, `record ${pick}: its seq and ` +
	    'place');
	check((await page.textContent('#chain-hash')) === hashOf(pick, 'hash'),
	    '... its hash, as in the file');
	check((await page.textContent('#chain-prev')) === hashOf(pick - 1, 'hash'),
	    '... its prev, the hash of the record before it');
	check(await page.$eval('#chain-links', (e, want) => e.className === 'ok' &&
	    e.textContent === 'prev is the hash of record ' + want, pick - 1),
	    '... shown as linked to the record before it');
	check((await page.textContent('#detail pre.raw')) === LINES[pick - 1],
	    '... and the line exactly as written');
	/* README's picture: the filtered view with this record open, from the top. */
	await page.evaluate(() => window.scrollTo(0, 0));
	const shotFile = await shot(page, '03-record.png');
	if (env.SHOT)
		fs.copyFileSync(shotFile, env.SHOT);

	/* 4. Hostile records: markup and script in host, path, SNI, target. */
	await filter(page, { host: 'xss.test' });
	await waitTotal(page, HOSTILE.length);
	got = await rows(page);
	const text = got.map((r) => r.req).join('\n');
	for (const p of ['<img src=x onerror="window.__pwned=1">',
	    '/<script>window.__pwned=2</script>', '<img src=x onerror=window.__pwned=3>',
	    'http://x/"><svg onload=window.__pwned=4>'])
		check(text.includes(p), `the hostile text is shown as text: ${p}`);
	for (const n of HOSTILE) {
		await openRecord(page, n);
		check(await page.$$eval('#detail .fields td', (tds) =>
		    tds.some((td) => /__pwned/.test(td.textContent))),
		    `record ${n} in full: the hostile field shown as text`);
	}
	check(await page.$$eval('#records img, #records svg, #records script, ' +
	    '#detail img, #detail svg, #detail script', (e) => e.length) === 0,
	    'no element was made of a record\'s markup');
	check(await page.evaluate(() => window.__pwned === undefined),
	    'no payload ran (window.__pwned is not set)');
	await shot(page, '04-hostile.png');

	/* The CSP is a wall of its own: markup put in as HTML runs nothing... */
	let r = await injectMarkup(page);
	check(r.pwned === null && r.violations > 0, 'markup inserted as HTML: its ' +
	    `inline handler is refused by the CSP (${r.violations} violation(s))`);
	/* ... and without the CSP the same markup runs: the probe can see it. */
	const bare = await context.newPage();
	await bare.route('**/*', async (route) => {
		const resp = await route.fetch();
		const headers = resp.headers();
		delete headers['content-security-policy'];
		await route.fulfill({ response: resp, headers: headers });
	});
	await bare.goto(env.MAIN);
	await bare.waitForSelector('#verify.ok');
	r = await injectMarkup(bare);
	check(r.pwned === 'csp', 'positive control: the page served without its CSP ' +
	    'runs the same markup\'s handler');
	await bare.close();

	/* 5. The summary. */
	await filter(page, {});
	await page.click('#tab-summary');
	await page.waitForFunction(() => document.body.dataset.loaded === 'summary');
	check(await page.$$eval('article.sandbox', (a) => a.length) === 3,
	    'the summary has the three sandboxes');
	const denied = await page.$$eval('article.sandbox ol.hosts li', (lis, host) =>
	    lis.filter((li) => li.querySelector('a').textContent === host)
	    .map((li) => Number(li.textContent.slice(host.length).trim().split(' ')[0])),
	    HOST);
	check(denied.reduce((a, b) => a + b, 0) === DENIED.length,
	    `... its denied lists count ${HOST} ${DENIED.length} times`);
	check(await page.$$eval('article.sandbox h4', (h) => h.some((e) =>
	    /^exfil events: [1-9]/.test(e.textContent))), '... with exfil events');
	await shot(page, '05-summary.png');

	/* 6. A tampered copy: the banner names the first bad line. */
	const tp = await context.newPage();
	await tp.goto(env.TAMPERED);
	await tp.waitForSelector('#verify.tampered');
	const banner = await tp.textContent('#verify');
	check(banner.startsWith(`TAMPERED: first bad line ${TLINE} `),
	    `a tampered log: the banner says "${banner.slice(0, 60)}..."`);
	check(await tp.$eval('#verify', (e) => e.dataset.line) === String(TLINE),
	    `... line ${TLINE}`);
	await tp.waitForFunction(() =>
	    document.querySelectorAll('#records tbody tr').length === 100);
	got = await rows(tp);
	check(got.every((x) => (x.n >= TLINE) === x.cls.includes('unverified')),
	    `... rows from record ${TLINE} on marked as not vouched for, those before not`);
	await shot(tp, '06-tampered.png');
	await tp.close();

	/* 7. The live tail: records appended to the log appear on top. */
	await page.click('#tab-records');
	await page.check('#tail');
	await page.waitForFunction(() =>
	    /waiting for records after/.test(document.querySelector('#tail-state').textContent));
	execFileSync(env.GEN, [env.LOG], { input: fs.readFileSync(env.TAILSPEC) });
	const ntail = fs.readFileSync(env.TAILSPEC, 'utf8').trim().split('\n').length;
	t1 = Date.now();
	await page.waitForFunction((want) => document.querySelectorAll(
	    '#records tbody tr .c-dst').length > 0 && Array.from(document.querySelectorAll(
	    '#records tbody tr')).slice(0, want).every((tr) =>
	    tr.querySelector('.c-dst').textContent === 'tail.test:443'), ntail);
	note(`tail: ${ntail} appended records shown ${Date.now() - t1} ms after the write`);
	got = await rows(page);
	check(got[0].n === NREC + ntail && got.length === 100,
	    `live tail: the ${ntail} appended records on top, the page still 100 rows`);
	await page.waitForFunction((want) => document.querySelector('#verify').textContent
	    .includes('chain ok: ' + want + ' records'), NREC + ntail);
	check(true, '... and the header verified them (chain ok, ' + (NREC + ntail) +
	    ' records)');
	await shot(page, '07-tail.png');

	check(pageErrors.length === 0, 'no script error on the page' +
	    (pageErrors.length ? ': ' + pageErrors.join('; ') : ''));
	await browser.close();
}

main().then(() => process.exit(failed ? 1 : 0), (e) => {
	console.log('FAIL\tthe browser run stopped: ' + String(e && e.message || e)
	    .split('\n')[0]);
	process.exit(1);
});
