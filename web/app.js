/*
 * web/app.js: the page of `airlock audit serve` (docs/AUDIT.md, "The web view").
 *
 * Every value of a record is hostile content: a VM chose its hosts, paths and SNI,
 * and a file handed to the view may have been edited by anyone.  So this script
 * builds the document with createElement and textContent only (el() below): no
 * innerHTML, insertAdjacentHTML, document.write, eval or inline handlers, here or
 * anywhere (tests/integration/audit_serve.t greps for them).  A value is text,
 * whatever it holds.  The server's Content-Security-Policy (default-src 'self', no
 * inline script) is the second wall.
 *
 * Large logs: the server pages and filters; the page holds one page of records.
 */
'use strict';

(function () {
	var state = {
		filters: {},		/* the API's filter parameters */
		offset: 0,		/* from the newest (order=desc) */
		limit: 100,
		total: 0,
		records: 0,		/* records in the log */
		lastN: 0,		/* the newest record shown: where the tail goes on */
		selected: 0,
		tail: false,
		tailReq: null,
		generation: -1,
		pageSeq: 0,		/* answers to older requests are dropped */
		view: 'records'
	};
	var FILTER_KEYS = ['sandbox', 'event', 'decision', 'reason', 'host', 'host_part',
	    'since', 'until', 'q'];
	/*
	 * The API's bearer token: printed by `airlock audit serve` as #token= (a
	 * fragment never leaves the browser), kept for this tab only, and taken out of
	 * the address bar so that a shared link or bookmark does not carry it.
	 */
	var TOKEN = (function () {
		var m = /(?:^#|&)token=([0-9a-f]{64})(?:&|$)/.exec(location.hash);

		try {
			if (m)
				sessionStorage.setItem('airlock-audit-token', m[1]);
			else
				return sessionStorage.getItem('airlock-audit-token') || '';
		} catch (e) {
			/* no storage: the token lives as long as this page */
		}
		return m ? m[1] : '';
	})();
	var AUTH = { Authorization: 'Bearer ' + TOKEN };

	/* An element with text (never markup) and children. */
	function el(tag, attrs, children) {
		var e = document.createElement(tag);
		var k;

		attrs = attrs || {};
		for (k in attrs) {
			if (!Object.prototype.hasOwnProperty.call(attrs, k))
				continue;
			if (k === 'text')
				e.textContent = attrs[k];
			else if (k === 'class')
				e.className = attrs[k];
			else if (k === 'onclick')
				e.addEventListener('click', attrs[k]);
			else
				e.setAttribute(k, attrs[k]);
		}
		(children || []).forEach(function (c) {
			e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
		});
		return e;
	}

	function $(id) {
		return document.getElementById(id);
	}

	function clear(node) {
		while (node.firstChild)
			node.removeChild(node.firstChild);
	}

	function str(v) {
		if (v === undefined || v === null)
			return '';
		return typeof v === 'string' ? v : JSON.stringify(v);
	}

	function query(params) {
		return Object.keys(params).filter(function (k) {
			return params[k] !== '' && params[k] !== undefined && params[k] !== null;
		}).map(function (k) {
			return encodeURIComponent(k) + '=' + encodeURIComponent(params[k]);
		}).join('&');
	}

	function api(path, params) {
		var q = query(params || {});

		return fetch('/api/' + path + (q ? '?' + q : ''), {
			credentials: 'same-origin', cache: 'no-store', headers: AUTH
		}).then(function (r) {
			return r.json().then(function (j) {
				if (!r.ok)
					throw new Error(j.error || ('HTTP ' + r.status));
				return j;
			});
		});
	}

	function showError(e) {
		var box = $('error');

		if (e === null) {
			box.hidden = true;
			return;
		}
		box.textContent = String(e && e.message ? e.message : e);
		box.hidden = false;
	}

	/* The header: the files and the chain's verdict. */
	function renderStatus(s) {
		var v = s.verify, box = $('verify'), text;

		$('files').textContent = s.files.map(function (f) {
			return f.path + ' (' + f.records + ')';
		}).join(', ') + (s.keyed ? ' · keyed' : '');
		box.className = 'verify ' + v.state;
		box.dataset.state = v.state;
		if (v.state === 'tampered') {
			box.dataset.line = String(v.line);
			text = 'TAMPERED: first bad line ' + v.line + ' of ' + v.path +
			    ' (record ' + v.n + '): ' + v.why +
			    '. Records from there on are not vouched for.';
		} else if (v.state === 'ok') {
			text = 'chain ok: ' + s.records + ' records, seq ' + v.first_seq +
			    '..' + v.last_seq + ', head ' + str(v.head).slice(0, 16) + '…' +
			    (v.continued ? ' (continues an earlier file)' : '');
		} else if (v.state === 'empty')
			text = 'no records: nothing verified';
		else
			text = 'cannot read ' + v.path + ': ' + v.why;
		if (s.pending > 0)
			text += ' · a last line of ' + s.pending + ' bytes waits for its newline';
		box.textContent = text;
		state.records = s.records;
		state.generation = s.generation;
		/* The files were read again (truncated, rotated): numbers changed. */
		if (state.rereads !== undefined && state.rereads !== s.rereads &&
		    state.view === 'records')
			loadPage();
		state.rereads = s.rereads;
	}

	function loadStatus() {
		return api('status').then(renderStatus);
	}

	function cellDst(r) {
		return str(r.dst || r.qname);
	}

	function cellWhy(r) {
		if (r.rule && r.reason)
			return r.rule + ' / ' + r.reason;
		return str(r.rule || r.reason);
	}

	function cellReq(r) {
		var s = [r.method, r.path].filter(Boolean).join(' ');

		if (r.sni)
			s += (s ? ' ' : '') + 'sni ' + r.sni;
		if (r.host)
			s += (s ? ' ' : '') + 'host ' + r.host;
		if (r.target)
			s += (s ? ' ' : '') + 'target ' + r.target;
		return s;
	}

	function row(item) {
		var r = item.record || {};
		var tr = el('tr', {
			'data-n': String(item.n),
			class: (item.verified ? '' : 'unverified ') + (r.decision === 'deny' ?
			    'deny' : '') + (item.n === state.selected ? ' selected' : ''),
			onclick: function () { loadRecord(item.n); }
		}, [
			el('td', { class: 'c-n', text: String(item.n) + (item.verified ? '' :
			    ' ⚠') }),
			el('td', { class: 'c-ts', text: str(r.ts) }),
			el('td', { class: 'c-sandbox', text: str(r.sandbox) }),
			el('td', { class: 'c-event', text: str(r.event) }),
			el('td', { class: 'c-decision', text: str(r.decision) +
			    (r.would_deny ? ' (would deny)' : '') }),
			el('td', { class: 'c-dst', text: cellDst(r) }),
			el('td', { class: 'c-why', text: cellWhy(r) }),
			el('td', { class: 'c-req', text: item.raw !== undefined ?
			    'not a record: ' + item.raw : cellReq(r) }),
			el('td', { class: 'c-status', text: str(r.status) })
		]);
		return tr;
	}

	function renderPage(j) {
		var body = $('records').tBodies[0], pages, page;

		clear(body);
		j.items.forEach(function (item) { body.appendChild(row(item)); });
		state.total = j.total;
		state.records = j.records;
		state.lastN = j.records;
		$('count').textContent = j.total + (j.total === 1 ? ' record matches' :
		    ' records match') + ' (of ' + j.records + ')';
		$('count').dataset.total = String(j.total);
		pages = Math.max(1, Math.ceil(j.total / state.limit));
		page = Math.floor(state.offset / state.limit) + 1;
		$('page').textContent = 'page ' + page + ' of ' + pages;
		$('first').disabled = $('prev').disabled = state.offset === 0;
		$('next').disabled = $('last').disabled = state.offset + state.limit >= j.total;
		document.body.dataset.loaded = 'records';
	}

	function loadPage() {
		var seq = ++state.pageSeq;
		var p = Object.assign({}, state.filters, {
			offset: state.offset, limit: state.limit, order: 'desc'
		});

		return api('records', p).then(function (j) {
			if (seq !== state.pageSeq)
				return;
			showError(null);
			renderPage(j);
		}).catch(showError);
	}

	/* One record in full: its place in the chain, then every field, then the line. */
	function renderRecord(j) {
		var pane = $('detail'), r = j.record || {}, c = j.chain || {}, fields, k;

		clear(pane);
		pane.appendChild(el('h2', { text: 'record ' + j.n }));
		pane.appendChild(el('p', { class: 'where', text: j.file + ', line ' + j.line }));
		pane.appendChild(el('dl', { id: 'chain', class: 'chain' }, [
			el('dt', { text: 'chain' }),
			el('dd', { id: 'chain-seq', text: 'seq ' + str(c.seq) + ' (record ' +
			    j.n + ' of ' + c.of + ')' }),
			el('dt', { text: 'prev' }),
			el('dd', { id: 'chain-prev', class: 'hash', text: str(c.prev) }),
			el('dt', { text: 'hash' }),
			el('dd', { id: 'chain-hash', class: 'hash', text: str(c.hash) }),
			el('dt', { text: 'link' }),
			el('dd', { id: 'chain-links', class: c.links ? 'ok' : 'bad',
			    text: c.links ? (j.n === 1 ? 'prev is the zero hash: the chain ' +
			    'starts here' : 'prev is the hash of record ' + c.prev_n) :
			    (j.n === 1 ? 'prev is not the zero hash: continues an earlier file' :
			    'prev is NOT the hash of record ' + c.prev_n) }),
			el('dt', { text: 'verified' }),
			el('dd', { id: 'chain-verified', class: j.verified ? 'ok' : 'bad',
			    text: j.verified ? 'yes: the chain holds up to here' :
			    'no: at or after the first bad line' })
		]));
		fields = el('table', { class: 'fields' });
		for (k in r) {
			if (Object.prototype.hasOwnProperty.call(r, k))
				fields.appendChild(el('tr', {}, [
					el('th', { text: k }),
					el('td', { text: str(r[k]) })
				]));
		}
		pane.appendChild(fields);
		pane.appendChild(el('h3', { text: 'the line as written' }));
		pane.appendChild(el('pre', { class: 'raw', text: j.raw !== undefined ? j.raw :
		    JSON.stringify(r) }));
		document.body.dataset.loaded = 'record';
	}

	function loadRecord(n) {
		state.selected = n;
		Array.prototype.forEach.call(document.querySelectorAll('#records tr'),
		    function (tr) {
			tr.classList.toggle('selected', tr.dataset.n === String(n));
		});
		return api('record', { n: n }).then(function (j) {
			if (state.selected === j.n)
				renderRecord(j);
		}).catch(showError);
	}

	function hostList(title, list, count, sandbox) {
		var ul = el('ol', { class: 'hosts' });

		list.forEach(function (h) {
			ul.appendChild(el('li', {}, [
				el('a', { href: '#', text: h.host, onclick: function (e) {
					e.preventDefault();
					setFilters({ sandbox: sandbox, host: h.host });
				} }),
				' ' + h.count + (h.last ? ' (last ' + h.last + ')' : '')
			]));
		});
		return el('div', { class: 'list' }, [
			el('h4', { text: title + ' (' + count + ' host' + (count === 1 ? '' : 's') +
			    (count > list.length ? ', top ' + list.length : '') + ')' }), ul
		]);
	}

	function renderSummary(j) {
		var view = $('summary-view');

		clear(view);
		view.appendChild(el('p', { text: j.records + ' records; ' +
		    j.sandboxes.length + ' sandbox' + (j.sandboxes.length === 1 ? '' : 'es') +
		    ' (counts as airlock audit summary: a denial with "suppressed" counts ' +
		    '1 + suppressed)' }));
		j.sandboxes.forEach(function (sb) {
			var reasons = el('ol', { class: 'reasons' });
			var exfil = el('ol', { class: 'exfil' });

			sb.reasons.forEach(function (r) {
				reasons.appendChild(el('li', {}, [
					el('a', { href: '#', text: r.reason, onclick: function (e) {
						e.preventDefault();
						setFilters({ sandbox: sb.sandbox, reason: r.reason });
					} }),
					' ' + r.count
				]));
			});
			sb.exfil_recent.forEach(function (x) {
				exfil.appendChild(el('li', {}, [
					el('a', { href: '#', text: '#' + x.n, onclick: function (e) {
						e.preventDefault();
						showView('records');
						loadRecord(x.n);
					} }),
					' ' + [x.ts, x.dst, x.reason, x.secret, x.where].filter(Boolean)
					    .join(' ')
				]));
			});
			view.appendChild(el('article', { class: 'sandbox', 'data-sandbox':
			    sb.sandbox }, [
				el('h3', { text: 'sandbox ' + sb.sandbox + ': ' + sb.records +
				    ' records' }),
				hostList('top destinations allowed', sb.allowed, sb.allowed_hosts,
				    sb.sandbox),
				hostList('denied', sb.denied, sb.denied_hosts, sb.sandbox),
				sb.would_deny.length ? hostList('would deny (report mode)',
				    sb.would_deny, sb.would_deny_hosts, sb.sandbox) : el('span'),
				el('div', { class: 'list' }, [el('h4', { text: 'denials by reason' }),
				    reasons]),
				el('div', { class: 'list' }, [el('h4', { text: 'exfil events: ' +
				    sb.exfil + (sb.exfil > sb.exfil_recent.length ? ' (the last ' +
				    sb.exfil_recent.length + ')' : '') }), exfil])
			]));
		});
		document.body.dataset.loaded = 'summary';
	}

	function loadSummary() {
		return api('summary', state.filters.sandbox ?
		    { sandbox: state.filters.sandbox } : {}).then(renderSummary).catch(showError);
	}

	function showView(v) {
		state.view = v;
		$('tab-records').classList.toggle('active', v === 'records');
		$('tab-summary').classList.toggle('active', v === 'summary');
		$('records-view').hidden = v !== 'records';
		$('detail').hidden = v !== 'records';
		$('summary-view').hidden = v !== 'summary';
		if (v === 'summary')
			loadSummary();
	}

	/* The filters: the form, the location's hash (a link keeps them), the API's. */
	function formFilters() {
		var f = $('filters').elements, out = {};

		['sandbox', 'event', 'decision', 'reason', 'since', 'until', 'q'].forEach(
		    function (k) {
			if (f[k].value.trim() !== '')
				out[k] = f[k].value.trim();
		});
		if (f.host.value.trim() !== '')
			out[f.hostmode.value] = f.host.value.trim();
		return out;
	}

	function fillForm(filters) {
		var f = $('filters').elements;

		['sandbox', 'event', 'decision', 'reason', 'since', 'until', 'q'].forEach(
		    function (k) {
			f[k].value = filters[k] || '';
		});
		f.hostmode.value = filters.host_part ? 'host_part' : 'host';
		f.host.value = filters.host_part || filters.host || '';
	}

	function setFilters(filters) {
		state.filters = filters;
		state.offset = 0;
		fillForm(filters);
		history.replaceState(null, '', '#' + query(filters));
		showView('records');
		restartTail();
		return loadPage();
	}

	function hashFilters() {
		var out = {};

		location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
			var i = kv.indexOf('='), k, v;

			if (i < 1)
				return;
			try {
				k = decodeURIComponent(kv.slice(0, i));
				v = decodeURIComponent(kv.slice(i + 1));
			} catch (e) {
				return;
			}
			if (FILTER_KEYS.indexOf(k) >= 0)
				out[k] = v;
		});
		return out;
	}

	/*
	 * The live tail: a long poll for records after the newest shown that pass the
	 * filters; each answer goes on top (the newest page) and asks again.
	 */
	function tailOnce() {
		var ctl = new AbortController();
		var p = Object.assign({}, state.filters, { after: state.lastN, wait: 20 });

		state.tailReq = ctl;
		$('tail-state').textContent = 'waiting for records after #' + state.lastN;
		fetch('/api/tail?' + query(p), { signal: ctl.signal, cache: 'no-store',
		    headers: AUTH })
		    .then(function (r) { return r.json(); })
		    .then(function (j) {
			var body = $('records').tBodies[0];

			if (state.tailReq !== ctl)
				return;
			if (j.error)
				throw new Error(j.error);
			if (state.offset === 0 && j.items.length > 0) {
				j.items.forEach(function (item) {
					body.insertBefore(row(item), body.firstChild);
				});
				while (body.rows.length > state.limit)
					body.deleteRow(body.rows.length - 1);
				state.total += j.items.length;
				$('count').textContent = state.total + ' records match (of ' +
				    j.records + ')';
				$('count').dataset.total = String(state.total);
			}
			state.lastN = j.last;
			loadStatus().catch(showError);
			setTimeout(tailOnce, j.more ? 0 : 50);
		}).catch(function (e) {
			if (state.tailReq !== ctl || e.name === 'AbortError')
				return;
			$('tail-state').textContent = 'tail: ' + e.message + '; trying again';
			setTimeout(tailOnce, 2000);
		});
	}

	function restartTail() {
		if (state.tailReq)
			state.tailReq.abort();
		state.tailReq = null;
		$('tail-state').textContent = '';
		if (state.tail)
			setTimeout(tailOnce, 0);
	}

	function init() {
		$('filters').addEventListener('submit', function (e) {
			e.preventDefault();
			setFilters(formFilters());
		});
		$('clear').addEventListener('click', function () { setFilters({}); });
		$('first').addEventListener('click', function () {
			state.offset = 0;
			loadPage();
		});
		$('prev').addEventListener('click', function () {
			state.offset = Math.max(0, state.offset - state.limit);
			loadPage();
		});
		$('next').addEventListener('click', function () {
			state.offset += state.limit;
			loadPage();
		});
		$('last').addEventListener('click', function () {
			state.offset = Math.max(0, Math.floor((state.total - 1) / state.limit) *
			    state.limit);
			loadPage();
		});
		$('tab-records').addEventListener('click', function () { showView('records'); });
		$('tab-summary').addEventListener('click', function () { showView('summary'); });
		$('tail').addEventListener('change', function (e) {
			state.tail = e.target.checked;
			if (state.tail) {
				state.offset = 0;
				loadPage().then(restartTail);
			} else
				restartTail();
		});
		/* The verdict is looked at again every few seconds: the log may change. */
		setInterval(function () { loadStatus().catch(showError); }, 3000);
		state.filters = hashFilters();
		fillForm(state.filters);
		history.replaceState(null, '', '#' + query(state.filters));
		loadStatus().then(loadPage).catch(showError);
	}

	document.addEventListener('DOMContentLoaded', init);
})();
