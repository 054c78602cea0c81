// ticktrade serve: live web view. Plain JS, no dependencies; everything arrives over this
// page's own WebSocket in Deribit's protocol (see crates/serve/src/web.rs).
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const ROW_PX = 17; // ladder row height (app.css)
  const TAPE_ROWS = 80;
  const DEPTH_LEVELS = 60;
  const STATS_EVERY_MS = 1000;

  // JSON with every number kept as the exact text the server sent (prices and sizes are shown
  // as the venue quotes them; Number() is used only to sort and to draw).
  const parseExact = (text) =>
    JSON.parse(text, (key, value, ctx) =>
      typeof value === 'number' ? (ctx && typeof ctx.source === 'string' ? ctx.source : String(value)) : value);

  const st = {
    ws: null, nextId: 1, pending: new Map(), backoff: 500,
    instruments: new Map(), inst: null,
    bids: new Map(), asks: new Map(), changeId: null, syncing: true, resyncing: false,
    updates: 0, resyncs: 0, msgCount: 0, rate: 0, lastTrade: null, trades: [], newTrades: 0,
    stats: null, dirtyBook: false, dirtyTape: false, dirtyStats: false,
    prevBestBid: null, prevBestAsk: null,
  };

  // ---------------------------------------------------------------- formatting
  const group = (s) => {
    const [int, frac] = s.split('.');
    const neg = int.startsWith('-');
    const digits = neg ? int.slice(1) : int;
    const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, '\u2009');
    return (neg ? '-' : '') + grouped + (frac !== undefined ? '.' + frac : '');
  };
  const fmtInt = (n) => group(String(Math.round(Number(n))));
  const fmtBytes = (n) => {
    n = Number(n);
    if (n < 1024) return n + ' B';
    if (n < 1048576) return (n / 1024).toFixed(1) + ' KiB';
    if (n < 1073741824) return (n / 1048576).toFixed(1) + ' MiB';
    return (n / 1073741824).toFixed(2) + ' GiB';
  };
  const fmtNs = (ns) => {
    ns = Number(ns);
    if (!ns) return '\u2013';
    if (ns < 1000) return ns.toFixed(0) + ' ns';
    if (ns < 1e6) return (ns / 1e3).toFixed(ns < 1e4 ? 1 : 0) + ' \u00b5s';
    if (ns < 1e9) return (ns / 1e6).toFixed(ns < 1e7 ? 2 : 1) + ' ms';
    return (ns / 1e9).toFixed(2) + ' s';
  };
  const fmtTime = (ms) => {
    const d = new Date(Number(ms));
    const p = (n, w = 2) => String(n).padStart(w, '0');
    return `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}.${p(d.getUTCMilliseconds(), 3)}`;
  };
  // Decimal places of a price string, to print a difference of two prices at the venue's precision.
  const decimals = (s) => (s.includes('.') ? s.length - s.indexOf('.') - 1 : 0);

  // ---------------------------------------------------------------- WebSocket / JSON-RPC
  function connect() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${proto}//${location.host}/ws/api/v2`);
    st.ws = ws;
    ws.onopen = () => {
      st.backoff = 500;
      setConn(true, 'live');
      start();
    };
    ws.onmessage = (ev) => {
      st.msgCount++;
      let msg;
      try {
        msg = parseExact(ev.data);
      } catch (e) {
        console.warn('ticktrade: unparsable frame', e);
        return;
      }
      if (msg.method === 'subscription') return onNotification(msg.params.channel, msg.params.data);
      if (msg.method === 'heartbeat') {
        if (msg.params && msg.params.type === 'test_request') rpc('public/test', {});
        return;
      }
      if (msg.id !== undefined) {
        const p = st.pending.get(String(msg.id));
        if (!p) return;
        st.pending.delete(String(msg.id));
        if (msg.error) p.reject(msg.error);
        else p.resolve(msg.result);
      }
    };
    ws.onclose = () => {
      setConn(false, 'reconnecting');
      for (const p of st.pending.values()) p.reject({ message: 'connection closed' });
      st.pending.clear();
      st.syncing = true;
      setTimeout(connect, st.backoff);
      st.backoff = Math.min(st.backoff * 2, 8000);
    };
  }

  function rpc(method, params) {
    return new Promise((resolve, reject) => {
      if (!st.ws || st.ws.readyState !== WebSocket.OPEN) return reject({ message: 'not connected' });
      const id = st.nextId++;
      st.pending.set(String(id), { resolve, reject });
      st.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  function setConn(up, text) {
    $('conn').className = 'conn ' + (up ? 'up' : 'down');
    $('conn-text').textContent = text;
  }

  async function start() {
    try {
      const list = await rpc('public/get_instruments', { currency: 'any' });
      fillInstruments(list);
    } catch (e) {
      console.warn('ticktrade: get_instruments failed', e);
      return;
    }
    const want = decodeURIComponent(location.hash.slice(1));
    const names = [...st.instruments.keys()];
    const pick = st.instruments.has(want) ? want : names.includes('BTC-PERPETUAL') ? 'BTC-PERPETUAL' : names[0];
    if (pick) choose(pick);
  }

  function fillInstruments(list) {
    const sel = $('instrument');
    sel.textContent = '';
    st.instruments.clear();
    const groups = new Map();
    for (const i of list) {
      st.instruments.set(i.instrument_name, i);
      const label = `${i.base_currency || ''} ${i.kind || ''}`.trim() || 'instruments';
      if (!groups.has(label)) groups.set(label, []);
      groups.get(label).push(i.instrument_name);
    }
    for (const [label, names] of [...groups.entries()].sort()) {
      const og = document.createElement('optgroup');
      og.label = label;
      for (const n of names.sort()) {
        const o = document.createElement('option');
        o.value = o.textContent = n;
        og.appendChild(o);
      }
      sel.appendChild(og);
    }
  }

  const bookCh = (i) => `book.${i}.100ms`;
  const tradesCh = (i) => `trades.${i}.100ms`;

  function choose(name) {
    const old = st.inst;
    st.inst = name;
    $('instrument').value = name;
    if (location.hash.slice(1) !== name) history.replaceState(null, '', '#' + encodeURIComponent(name));
    st.bids.clear();
    st.asks.clear();
    st.changeId = null;
    st.syncing = true;
    st.trades = [];
    st.lastTrade = null;
    st.prevBestBid = st.prevBestAsk = null;
    st.dirtyBook = st.dirtyTape = true;
    const subscribe = () => rpc('public/subscribe', { channels: [bookCh(name), tradesCh(name)] }).catch((e) => console.warn('ticktrade: subscribe failed', e));
    if (old && old !== name) {
      rpc('public/unsubscribe', { channels: [bookCh(old), tradesCh(old)] }).catch(() => {}).then(subscribe);
    } else {
      subscribe();
    }
  }

  // A gap in the change_id chain: drop the book and subscribe afresh for a new snapshot.
  function resync() {
    if (st.resyncing || !st.inst) return;
    st.resyncs++;
    st.resyncing = true;
    st.syncing = true;
    const ch = [bookCh(st.inst)];
    rpc('public/unsubscribe', { channels: ch })
      .then(() => rpc('public/subscribe', { channels: ch }))
      .catch((e) => console.warn('ticktrade: resync failed', e))
      .finally(() => { st.resyncing = false; });
  }

  function applySide(map, levels) {
    for (const [action, price, amount] of levels) {
      if (action === 'delete' || Number(amount) === 0) map.delete(price);
      else map.set(price, amount);
    }
  }

  function onNotification(channel, data) {
    if (!st.inst) return;
    if (channel === bookCh(st.inst)) {
      const snapshot = data.type === 'snapshot' || data.prev_change_id === undefined;
      if (snapshot) {
        st.bids.clear();
        st.asks.clear();
        applySide(st.bids, data.bids || []);
        applySide(st.asks, data.asks || []);
        st.changeId = data.change_id;
        st.syncing = false;
      } else {
        if (st.syncing) return;
        if (data.prev_change_id !== st.changeId) return resync();
        applySide(st.bids, data.bids || []);
        applySide(st.asks, data.asks || []);
        st.changeId = data.change_id;
      }
      st.updates++;
      st.dirtyBook = true;
    } else if (channel === tradesCh(st.inst)) {
      const list = Array.isArray(data) ? data : [data];
      for (const t of list) {
        st.trades.unshift(t);
        st.lastTrade = t;
        st.newTrades++;
      }
      if (st.trades.length > TAPE_ROWS) st.trades.length = TAPE_ROWS;
      st.dirtyTape = true;
    }
  }

  // ---------------------------------------------------------------- book views
  const sortedLevels = (map, desc) => {
    const arr = [...map.entries()].map(([p, a]) => [p, a, Number(p), Number(a)]);
    arr.sort((x, y) => (desc ? y[2] - x[2] : x[2] - y[2]));
    return arr;
  };

  let ladderRows = null;
  // Rows each side that fit the ladder's height.
  const levelsThatFit = () => Math.max(4, Math.floor(($('ladder').clientHeight - 30) / ROW_PX / 2));
  function buildLadder() {
    const box = $('ladder');
    box.textContent = '';
    const LEVELS = levelsThatFit();
    const mk = (cls) => {
      const row = document.createElement('div');
      row.className = 'row ' + cls;
      row.innerHTML = '<i class="bar-b"></i><i class="bar-a"></i><span class="bsz"></span><span class="px"></span><span class="asz"></span>';
      box.appendChild(row);
      return row;
    };
    const asks = [];
    for (let i = 0; i < LEVELS; i++) asks.push(mk('a'));
    const spread = document.createElement('div');
    spread.className = 'spread-row';
    box.appendChild(spread);
    const bids = [];
    for (let i = 0; i < LEVELS; i++) bids.push(mk('b'));
    ladderRows = { asks: asks.reverse(), bids, spread, levels: LEVELS };
  }

  function setRow(row, price, amount, side, max, best) {
    const [barB, barA, bsz, px, asz] = row.children;
    px.textContent = price || '';
    bsz.textContent = side === 'b' && amount ? amount : '';
    asz.textContent = side === 'a' && amount ? amount : '';
    // a bar under the size, as wide as the size column at the largest size shown
    const frac = amount && max > 0 ? Number(amount) / max / 3.15 : 0;
    const w = `calc((100% - 16px) * ${frac.toFixed(4)})`;
    barB.style.width = side === 'b' ? w : '0';
    barA.style.width = side === 'a' ? w : '0';
    row.classList.toggle('best-bid', best && side === 'b');
    row.classList.toggle('best-ask', best && side === 'a');
  }

  function renderBook() {
    if (!ladderRows || ladderRows.levels !== levelsThatFit()) buildLadder();
    const LEVELS = ladderRows.levels;
    const bids = sortedLevels(st.bids, true);
    const asks = sortedLevels(st.asks, false);
    const shownB = bids.slice(0, LEVELS);
    const shownA = asks.slice(0, LEVELS);
    const max = Math.max(1e-12, ...shownB.map((l) => l[3]), ...shownA.map((l) => l[3]));
    for (let i = 0; i < LEVELS; i++) {
      const a = shownA[i];
      const b = shownB[i];
      setRow(ladderRows.asks[i], a && a[0], a && a[1], 'a', max, i === 0 && !!a);
      setRow(ladderRows.bids[i], b && b[0], b && b[1], 'b', max, i === 0 && !!b);
    }
    const bb = bids[0];
    const ba = asks[0];
    $('best-bid-price').textContent = bb ? bb[0] : '\u2013';
    $('best-bid-amount').textContent = bb ? bb[1] : '\u2013';
    $('best-ask-price').textContent = ba ? ba[0] : '\u2013';
    $('best-ask-amount').textContent = ba ? ba[1] : '\u2013';
    let spreadText = '\u2013';
    if (bb && ba) {
      const dp = Math.max(decimals(bb[0]), decimals(ba[0]));
      const sp = ba[2] - bb[2];
      const bps = (sp / ((ba[2] + bb[2]) / 2)) * 1e4;
      spreadText = `${sp.toFixed(dp)} (${bps.toFixed(1)} bp)`;
    }
    $('spread').textContent = spreadText;
    ladderRows.spread.textContent = bb && ba ? `spread ${spreadText}` : st.syncing ? 'waiting for snapshot\u2026' : 'one-sided book';
    flashIfChanged('best-bid-price', bb && bb[0], 'prevBestBid');
    flashIfChanged('best-ask-price', ba && ba[0], 'prevBestAsk');
    $('change-id').textContent = st.changeId === null ? '\u2013' : st.changeId;
    $('updates').textContent = fmtInt(st.updates);
    $('resyncs').textContent = fmtInt(st.resyncs);
    $('ladder-meta').textContent = `${st.bids.size} bids \u00b7 ${st.asks.size} asks`;
    drawDepth(bids.slice(0, DEPTH_LEVELS), asks.slice(0, DEPTH_LEVELS));
  }

  function flashIfChanged(id, value, key) {
    if (value && st[key] && value !== st[key]) {
      const el = $(id);
      el.classList.remove('flash');
      void el.offsetWidth;
      el.classList.add('flash');
    }
    st[key] = value || null;
  }

  // ---------------------------------------------------------------- canvas helpers
  function canvas2d(id) {
    const c = $(id);
    const r = c.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(r.width * dpr));
    const h = Math.max(1, Math.round(r.height * dpr));
    if (c.width !== w || c.height !== h) {
      c.width = w;
      c.height = h;
    }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, r.width, r.height);
    return { g, w: r.width, h: r.height };
  }

  const niceStep = (range, n) => {
    const raw = range / Math.max(1, n);
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  };
  const compact = (v) => {
    const a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(a >= 1e10 ? 0 : 1) + 'G';
    if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + 'M';
    if (a >= 1e3) return (v / 1e3).toFixed(a >= 1e4 ? 0 : 1) + 'k';
    return String(+v.toPrecision(4));
  };
  const css = getComputedStyle(document.documentElement);
  const color = (name) => css.getPropertyValue(name).trim();

  function axisText(g, text, x, y, align, baseline, col) {
    g.fillStyle = col || '#7d8896';
    g.textAlign = align;
    g.textBaseline = baseline;
    g.fillText(text, x, y);
  }

  // ---------------------------------------------------------------- depth chart
  function drawDepth(bids, asks) {
    const { g, w, h } = canvas2d('depth');
    const L = 64, R = 14, T = 14, B = 34;
    const pw = w - L - R, ph = h - T - B;
    g.font = '11px "DejaVu Sans Mono", monospace';
    if (!bids.length && !asks.length) {
      axisText(g, st.syncing ? 'waiting for the book snapshot\u2026' : 'empty book', w / 2, h / 2, 'center', 'middle');
      return;
    }
    const cum = (levels) => {
      let s = 0;
      return levels.map((l) => [l[2], (s += l[3])]);
    };
    const cb = cum(bids), ca = cum(asks);
    const bestB = cb.length ? cb[0][0] : null, bestA = ca.length ? ca[0][0] : null;
    const mid = bestB !== null && bestA !== null ? (bestB + bestA) / 2 : bestB !== null ? bestB : bestA;
    const reach = Math.max(cb.length ? mid - cb[cb.length - 1][0] : 0, ca.length ? ca[ca.length - 1][0] - mid : 0, 1e-9);
    const x0 = mid - reach * 1.02, x1 = mid + reach * 1.02;
    const yMax = Math.max(cb.length ? cb[cb.length - 1][1] : 0, ca.length ? ca[ca.length - 1][1] : 0) * 1.08 || 1;
    const X = (p) => L + ((p - x0) / (x1 - x0)) * pw;
    const Y = (v) => T + ph - (v / yMax) * ph;
    // grid and axes
    g.strokeStyle = '#1c242e';
    g.lineWidth = 1;
    const ys = niceStep(yMax, 4);
    for (let v = 0; v <= yMax; v += ys) {
      g.beginPath(); g.moveTo(L, Math.round(Y(v)) + 0.5); g.lineTo(L + pw, Math.round(Y(v)) + 0.5); g.stroke();
      axisText(g, compact(v), L - 6, Y(v), 'right', 'middle');
    }
    const xs = niceStep(x1 - x0, Math.max(2, Math.floor(pw / 110)));
    const dp = Math.max(0, -Math.floor(Math.log10(xs)));
    for (let p = Math.ceil(x0 / xs) * xs; p <= x1; p += xs) {
      g.beginPath(); g.moveTo(Math.round(X(p)) + 0.5, T); g.lineTo(Math.round(X(p)) + 0.5, T + ph); g.stroke();
      axisText(g, p.toFixed(dp), X(p), T + ph + 5, 'center', 'top');
    }
    g.strokeStyle = '#2a3542';
    g.beginPath(); g.moveTo(L + 0.5, T); g.lineTo(L + 0.5, T + ph + 0.5); g.lineTo(L + pw, T + ph + 0.5); g.stroke();
    const info = st.instruments.get(st.inst) || {};
    const quote = info.quote_currency || info.counter_currency || '';
    axisText(g, `price${quote ? ' (' + quote + ')' : ''}`, L + pw, h - 2, 'right', 'bottom');
    g.save();
    g.translate(12, T + ph / 2);
    g.rotate(-Math.PI / 2);
    // Deribit quotes amounts of inverse ("reversed") instruments in the quote currency, others in the base.
    const unit = info.instrument_type === 'reversed' ? quote : info.base_currency || '';
    axisText(g, `cumulative amount${unit ? ' (' + unit + ')' : ''}`, 0, 0, 'center', 'middle');
    g.restore();
    // curves (step functions from the best price outwards)
    const curve = (pts, dir, line, fill) => {
      if (!pts.length) return;
      g.beginPath();
      g.moveTo(X(pts[0][0]), Y(0));
      let prev = 0;
      for (const [p, v] of pts) {
        g.lineTo(X(p), Y(prev));
        g.lineTo(X(p), Y(v));
        prev = v;
      }
      const end = dir < 0 ? x0 : x1;
      g.lineTo(X(end), Y(prev));
      g.strokeStyle = line;
      g.lineWidth = 1.6;
      g.stroke();
      g.lineTo(X(end), Y(0));
      g.closePath();
      g.fillStyle = fill;
      g.fill();
    };
    curve(cb, -1, color('--bid'), 'rgba(46,194,126,0.18)');
    curve(ca, 1, color('--ask'), 'rgba(240,86,92,0.18)');
    // mid line
    g.setLineDash([3, 3]);
    g.strokeStyle = '#e3b341';
    g.beginPath(); g.moveTo(Math.round(X(mid)) + 0.5, T); g.lineTo(Math.round(X(mid)) + 0.5, T + ph); g.stroke();
    g.setLineDash([]);
    const midDp = Math.max(bids[0] ? decimals(bids[0][0]) : 0, asks[0] ? decimals(asks[0][0]) : 0) + 1;
    axisText(g, `mid ${mid.toFixed(midDp)}`, X(mid) + 5, T + 2, 'left', 'top', '#e3b341');
  }

  // ---------------------------------------------------------------- trades tape
  function renderTape() {
    const box = $('tape');
    const frag = document.createDocumentFragment();
    const fresh = st.newTrades;
    st.trades.forEach((t, i) => {
      const row = document.createElement('div');
      const buy = t.direction === 'buy';
      row.className = 't ' + (buy ? 'bid' : 'ask') + (i < fresh ? ' new' : '');
      const cells = [fmtTime(t.timestamp), t.price, t.amount, buy ? 'B' : 'S'];
      for (const c of cells) {
        const s = document.createElement('span');
        s.textContent = c;
        row.appendChild(s);
      }
      frag.appendChild(row);
    });
    st.newTrades = 0;
    box.textContent = '';
    box.appendChild(frag);
    $('last-price').textContent = st.lastTrade ? st.lastTrade.price : '\u2013';
    $('last-price').className = 'num ' + (st.lastTrade ? (st.lastTrade.direction === 'buy' ? 'bid' : 'ask') : '');
    $('tape-meta').textContent = st.trades.length ? `last ${st.trades.length}` : 'waiting for trades\u2026';
  }

  // ---------------------------------------------------------------- server stats
  async function pollStats() {
    if (st.ws && st.ws.readyState === WebSocket.OPEN) {
      try {
        st.stats = await rpc('public/ticktrade_get_stats', {});
        st.dirtyStats = true;
      } catch (e) {
        if (e && e.message !== 'connection closed') console.warn('ticktrade: stats failed', e);
      }
    }
    st.rate = st.msgCount;
    st.msgCount = 0;
    $('rate').textContent = fmtInt(st.rate);
    setTimeout(pollStats, STATS_EVERY_MS);
  }

  function renderStats() {
    const s = st.stats;
    if (!s) return;
    const tbody = $('clients').tBodies[0];
    const rows = document.createDocumentFragment();
    for (const c of s.clients) {
      const tr = document.createElement('tr');
      if (c.id === s.client) tr.className = 'me';
      const cells = [
        ['#' + c.id], [fmtInt(c.subscriptions)], [fmtInt(c.messages)], [fmtBytes(c.bytes)], [fmtInt(c.queued)],
        [fmtInt(c.drops), Number(c.drops) > 0], [fmtInt(c.conflations), Number(c.conflations) > 0],
        [fmtInt(c.resyncs), Number(c.resyncs) > 0],
        [fmtNs(c.delay_p50_ns)], [fmtNs(c.delay_p99_ns)], [fmtNs(c.delay_p999_ns)],
      ];
      for (const [text, warn] of cells) {
        const td = document.createElement('td');
        td.textContent = text;
        if (warn) td.className = 'warn';
        tr.appendChild(td);
      }
      rows.appendChild(tr);
    }
    tbody.textContent = '';
    tbody.appendChild(rows);
    const t = s.totals;
    const f = s.fanout;
    $('clients').tFoot.innerHTML = '';
    const tr = document.createElement('tr');
    const foot = [
      'all', '', fmtInt(t.messages), fmtBytes(t.bytes), '', fmtInt(t.drops), fmtInt(t.conflations), fmtInt(t.resyncs),
      fmtNs(f.p50_ns), fmtNs(f.p99_ns), fmtNs(f.p999_ns),
    ];
    for (const text of foot) {
      const td = document.createElement('td');
      td.textContent = text;
      tr.appendChild(td);
    }
    $('clients').tFoot.appendChild(tr);
    const shown = s.clients.length < Number(s.clients_total) ? `${s.clients.length} of ${s.clients_total} shown \u00b7 ` : '';
    const b = s.bus;
    const bus = !b ? '' : ` \u00b7 NATS bus ${Number(b.connected) ? 'connected' : 'DISCONNECTED'}` +
      (Number(b.publisher)
        ? `: ${fmtInt(b.published)} published, ${fmtInt(b.dropped)} dropped`
        : `: ${fmtInt(b.received)} received, ${fmtInt(b.gaps)} gaps, ${fmtInt(b.resyncs)} resyncs, ${fmtInt(b.slow_consumers)} slow-consumer events`);
    $('clients-meta').textContent =
      `${fmtInt(s.clients_total)} connected \u00b7 ${shown}upstream: ${fmtInt(t.upstream_frames)} frames, ${t.upstream_channels} channels, ${fmtInt(t.resyncs)} resyncs \u00b7 ${fmtInt(t.disconnects)} cut off${bus}`;
    $('hist-meta').textContent = Number(f.count)
      ? `${fmtInt(f.count)} frames \u00b7 p50 ${fmtNs(f.p50_ns)} \u00b7 p99 ${fmtNs(f.p99_ns)} \u00b7 max ${fmtNs(f.max_ns)}`
      : '';
    drawHist(f);
  }

  // ---------------------------------------------------------------- fan-out histogram
  function drawHist(f) {
    const { g, w, h } = canvas2d('hist');
    const L = 56, R = 14, T = 26, B = 34;
    const pw = w - L - R, ph = h - T - B;
    g.font = '11px "DejaVu Sans Mono", monospace';
    const buckets = (f.buckets || []).map(([lo, hi, n]) => [Number(lo), Number(hi), Number(n)]);
    if (!buckets.length) {
      axisText(g, 'no frames fanned out yet', w / 2, h / 2, 'center', 'middle');
      return;
    }
    // x: log10(ns) from a whole decade below the first bucket to a decade above the last
    const lx0 = Math.floor(Math.log10(buckets[0][0]) + 1e-9);
    const lx1 = Math.max(lx0 + 2, Math.ceil(Math.log10(buckets[buckets.length - 1][1]) - 1e-9));
    const X = (ns) => L + ((Math.log10(ns) - lx0) / (lx1 - lx0)) * pw;
    const total = buckets.reduce((a, b) => a + b[2], 0) || 1;
    const yMax = Math.max(...buckets.map((b) => b[2] / total)) * 1.12;
    const Y = (v) => T + ph - (v / yMax) * ph;
    g.strokeStyle = '#1c242e';
    const ys = niceStep(yMax * 100, 4) / 100;
    for (let v = 0; v <= yMax + 1e-12; v += ys) {
      g.beginPath(); g.moveTo(L, Math.round(Y(v)) + 0.5); g.lineTo(L + pw, Math.round(Y(v)) + 0.5); g.stroke();
      axisText(g, (v * 100).toFixed(ys * 100 < 1 ? 1 : 0) + '%', L - 6, Y(v), 'right', 'middle');
    }
    for (let d = lx0; d <= lx1; d++) {
      const x = Math.round(X(Math.pow(10, d))) + 0.5;
      g.beginPath(); g.moveTo(x, T); g.lineTo(x, T + ph); g.stroke();
      const align = d === lx1 ? 'right' : d === lx0 ? 'left' : 'center';
      axisText(g, fmtNs(Math.pow(10, d)).replace('.00 ', ' ').replace('.0 ', ' '), x, T + ph + 5, align, 'top');
    }
    g.strokeStyle = '#2a3542';
    g.beginPath(); g.moveTo(L + 0.5, T); g.lineTo(L + 0.5, T + ph + 0.5); g.lineTo(L + pw, T + ph + 0.5); g.stroke();
    axisText(g, 'delay, upstream frame in \u2192 client frame written (log scale)', L + pw, h - 2, 'right', 'bottom');
    g.save();
    g.translate(12, T + ph / 2);
    g.rotate(-Math.PI / 2);
    axisText(g, 'share of frames', 0, 0, 'center', 'middle');
    g.restore();
    for (const [lo, hi, n] of buckets) {
      if (!n) continue;
      const x = X(lo) + 1, x2 = X(hi) - 1;
      g.fillStyle = 'rgba(88,166,255,0.75)';
      g.fillRect(x, Y(n / total), Math.max(1, x2 - x), T + ph - Y(n / total));
    }
    const marks = [['p50', f.p50_ns, '#e3b341'], ['p90', f.p90_ns, '#d29922'], ['p99', f.p99_ns, '#f0883e'], ['p99.9', f.p999_ns, '#f0565c']];
    let lastX = -1e9, row = 0;
    for (const [name, ns, col] of marks) {
      const v = Number(ns);
      if (!v) continue;
      const x = Math.round(X(Math.min(Math.max(v, Math.pow(10, lx0)), Math.pow(10, lx1)))) + 0.5;
      g.strokeStyle = col;
      g.setLineDash([4, 3]);
      g.beginPath(); g.moveTo(x, T - 2); g.lineTo(x, T + ph); g.stroke();
      g.setLineDash([]);
      row = x - lastX < 90 ? row + 1 : 0;
      lastX = x;
      const right = x > L + pw - 90; // near the right edge: label on the line's left
      axisText(g, `${name} ${fmtNs(v)}`, right ? x - 3 : x + 3, T - 12 + row * 12, right ? 'right' : 'left', 'middle', col);
    }
  }

  // ---------------------------------------------------------------- main loop
  function frame() {
    if (st.dirtyBook) {
      st.dirtyBook = false;
      renderBook();
    }
    if (st.dirtyTape) {
      st.dirtyTape = false;
      renderTape();
    }
    if (st.dirtyStats) {
      st.dirtyStats = false;
      renderStats();
    }
    requestAnimationFrame(frame);
  }

  $('instrument').addEventListener('change', (e) => choose(e.target.value));
  window.addEventListener('resize', () => {
    st.dirtyBook = st.dirtyStats = true;
    st.prevBestBid = st.prevBestAsk = null;
  });
  // For tests and the console: a read-only view of what the page holds.
  window.ticktrade = {
    state: () => ({ instrument: st.inst, changeId: st.changeId, updates: st.updates, resyncs: st.resyncs, bids: st.bids.size, asks: st.asks.size }),
  };
  buildLadder();
  connect();
  setTimeout(pollStats, 300);
  requestAnimationFrame(frame);
})();
