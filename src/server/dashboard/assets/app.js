// draplane dashboard: a single page over the Kubernetes API of the server that serves it.
// Every request carries the viewer's own bearer token, so RBAC decides what is shown. Data is
// listed once, then kept current with watches; tables are paged so that thousands of Pods or
// hundreds of nodes stay responsive. All text from the API is inserted with textContent.
'use strict';

const RESOURCES = {
  nodes: {path: '/api/v1/nodes', cluster: true},
  resourceslices: {path: '/apis/resource.k8s.io/v1/resourceslices', cluster: true},
  devicetaintrules: {path: '/apis/resource.k8s.io/v1/devicetaintrules', cluster: true},
  resourceclaims: {path: '/apis/resource.k8s.io/v1/resourceclaims', ns: 'resource.k8s.io/v1'},
  pods: {path: '/api/v1/pods', ns: 'v1'},
  resourcequotas: {path: '/api/v1/resourcequotas', ns: 'v1'},
};
const PAGE = 50;
// Browsers open at most 6 HTTP/1.1 connections per server and a watch holds one for its life, so
// the page streams at most this many watches and re-lists the rest every POLL_MS.
const MAX_STREAMS = 3;
const POLL_MS = 10000;
let streams = 0;
// The charts' history: a sample every SAMPLE_MS, the last HISTORY kept (an hour), each of at most
// 2 + MAX_TIERS + 1 numbers, so the page's memory does not grow with time.
const SAMPLE_MS = 10000;
const HISTORY = 360;
// Upstream allows at most 8 firstAvailable subrequests (resource.k8s.io FirstAvailableDeviceRequestMaxSize).
const MAX_TIERS = 8;

const state = {
  token: sessionStorage.getItem('draplane.token') || '',
  namespaces: (sessionStorage.getItem('draplane.namespaces') || '').split(',').filter(Boolean),
  data: {},       // resource -> Map(key -> object)
  errors: {},     // resource -> message (403: not permitted for this viewer)
  loaded: new Set(),
  pages: {},      // table id -> page index
  filters: {},    // table id -> filter text
  history: [],    // [{t, allocated, total, tiers}] every SAMPLE_MS, at most HISTORY samples
  // The server's clock minus the browser's (ms), from the Date header of the latest API answer:
  // waits are the server's now minus creationTimestamp, whatever the browser's clock says.
  clockOffset: 0,
  explain: {},    // Pod key -> {shown, loading, error, data}: its draplane.dev PodExplanation
  open: new Set(),  // ids of the expanded branches of explanation trees
  aborts: [],
  sampler: null,  // the interval that samples the charts' history
};

// --- tokens from the URL fragment (never sent to the server) ---------------------------------
(function takeFragment() {
  const h = location.hash.replace(/^#/, '');
  if (!h.includes('token=')) return;
  const params = new URLSearchParams(h);
  state.token = params.get('token') || '';
  state.namespaces = (params.get('namespace') || params.get('namespaces') || '')
      .split(',').map(s => s.trim()).filter(Boolean);
  sessionStorage.setItem('draplane.token', state.token);
  sessionStorage.setItem('draplane.namespaces', state.namespaces.join(','));
  history.replaceState(null, '', location.pathname + '#/overview');
})();

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function key(o) { return (o.metadata.namespace ? o.metadata.namespace + '/' : '') + o.metadata.name; }
function objects(r) { return [...(state.data[r] || new Map()).values()]; }

async function api(path, init) {
  const headers = {'Authorization': 'Bearer ' + state.token, 'Accept': 'application/json'};
  const res = await fetch(path, Object.assign({headers, cache: 'no-store'}, init || {}));
  noteServerTime(res);
  return res;
}

// Every answer of the server carries its time in the Date header (whole seconds, so the middle
// of that second is taken): the offset to the browser's clock is re-measured on each answer.
function noteServerTime(res) {
  const date = Date.parse(res.headers.get('Date') || '');
  if (!Number.isNaN(date)) state.clockOffset = date + 500 - Date.now();
}
function serverNow() { return Date.now() + state.clockOffset; }

// --- list and watch ---------------------------------------------------------------------------
function urlsFor(r) {
  const spec = RESOURCES[r];
  if (spec.cluster || state.namespaces.length === 0) return [spec.path];
  // A namespaced view: /api/v1/namespaces/NS/pods for each namespace.
  const [prefix, plural] = [spec.path.slice(0, spec.path.lastIndexOf('/')), spec.path.split('/').pop()];
  return state.namespaces.map(ns => `${prefix}/namespaces/${encodeURIComponent(ns)}/${plural}`);
}

async function listAndWatch(r, url) {
  const ctrl = new AbortController();
  state.aborts.push(ctrl);
  let delay = 1000;
  for (;;) {
    try {
      const res = await api(url, {signal: ctrl.signal});
      if (res.status === 401) { signOut('The token was not accepted (401).'); return; }
      if (!res.ok) {
        const body = await res.json().catch(() => ({}));
        state.errors[r] = `${res.status}: ${body.message || res.statusText}`;
        state.loaded.add(r + ' ' + url);
        changed();
        return;  // 403/404: this viewer cannot read it; shown as such.
      }
      const list = await res.json();
      const map = state.data[r] || (state.data[r] = new Map());
      const prefix = url === RESOURCES[r].path ? '' : url.split('/namespaces/')[1].split('/')[0] + '/';
      for (const k of [...map.keys()]) if (!prefix || k.startsWith(prefix)) map.delete(k);
      for (const o of list.items || []) map.set(key(o), o);
      delete state.errors[r];
      state.loaded.add(r + ' ' + url);
      changed();
      delay = 1000;
      if (streams >= MAX_STREAMS) {
        await new Promise(res => setTimeout(res, POLL_MS));
        continue;
      }
      const rv = list.metadata.resourceVersion;
      streams++;
      try {
        await stream(r, url, rv, map, ctrl);
      } finally {
        streams--;
      }
    } catch (e) {
      if (ctrl.signal.aborted) return;
    }
    await new Promise(res => setTimeout(res, delay));
    delay = Math.min(delay * 2, 30000);
  }
}

// Applies the watch events of `url` from `rv` to `map` until the stream ends.
async function stream(r, url, rv, map, ctrl) {
  const w = await api(`${url}?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`,
                      {signal: ctrl.signal});
  if (!w.ok || !w.body) throw new Error('watch ' + w.status);
  const reader = w.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += decoder.decode(value, {stream: true});
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!line.trim()) continue;
      const ev = JSON.parse(line);
      if (ev.type === 'ERROR') throw new Error('watch expired');
      if (ev.type === 'BOOKMARK') continue;
      if (ev.type === 'DELETED') map.delete(key(ev.object));
      else map.set(key(ev.object), ev.object);
      changed();
    }
  }
}

let renderTimer = null;
function changed() {
  if (renderTimer) return;
  renderTimer = setTimeout(() => { renderTimer = null; render(); }, 150);
}

// --- derived state ----------------------------------------------------------------------------
// Device key "driver/pool/device" -> {claim, request} for every allocated device.
function allocations() {
  const out = new Map();
  for (const c of objects('resourceclaims')) {
    for (const r of c.status?.allocation?.devices?.results || []) {
      out.set(`${r.driver}/${r.pool}/${r.device}`, {claim: key(c), request: r.request});
    }
  }
  return out;
}

// A taint as kubectl writes one (key=value:effect), naming the DeviceTaintRule it comes from, so a
// driver's health taint and a maintenance rule read apart.
function taintText(t) {
  return `${t.key || ''}${t.value ? '=' + t.value : ''}:${t.effect}` + (t.rule ? ` (rule ${t.rule})` : '');
}

function tainted(taints) {
  return taints.some(t => t.effect === 'NoSchedule' || t.effect === 'NoExecute');
}

// The taints DeviceTaintRules put on a device, as the scheduler applies them
// (api/device_taints.h): a rule selects by driver, pool and device name; one without a selector
// selects nothing unless annotated draplane.dev/select-all: "true"; effect None adds nothing.
function ruleTaints(driver, pool, name) {
  const out = [];
  for (const r of objects('devicetaintrules')) {
    const t = r.spec?.taint;
    if (!t || t.effect === 'None') continue;
    const s = r.spec.deviceSelector || {};
    const selects = !s.driver && !s.pool && !s.device
      ? r.metadata?.annotations?.['draplane.dev/select-all'] === 'true'
      : (!s.driver || s.driver === driver) && (!s.pool || s.pool === pool) && (!s.device || s.device === name);
    if (selects) out.push({...t, rule: r.metadata?.name});
  }
  return out;
}

// A resource.Quantity as a number (its decimal and binary suffixes), to compare counters.
function quantity(q) {
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(String(q ?? '0').trim());
  const scale = {'': 1, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
                 Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60};
  return m && scale[m[2]] !== undefined ? parseFloat(m[1]) * scale[m[2]] : NaN;
}

// What the allocated devices leave of every shared counter ("driver/pool/set/counter").
function countersLeft(alloc) {
  const left = new Map();
  for (const s of objects('resourceslices')) {
    const pool = s.spec.pool?.name || '';
    for (const set of s.spec.sharedCounters || []) {
      for (const [name, c] of Object.entries(set.counters || {})) {
        left.set(`${s.spec.driver}/${pool}/${set.name}/${name}`, quantity(c.value));
      }
    }
  }
  for (const s of objects('resourceslices')) {
    const pool = s.spec.pool?.name || '';
    for (const d of s.spec.devices || []) {
      if (!alloc.has(`${s.spec.driver}/${pool}/${d.name}`)) continue;
      for (const use of d.consumesCounters || []) {
        for (const [name, c] of Object.entries(use.counters || {})) {
          const k = `${s.spec.driver}/${pool}/${use.counterSet}/${name}`;
          if (left.has(k)) left.set(k, left.get(k) - quantity(c.value));
        }
      }
    }
  }
  return left;
}

// Whether a free device's counter consumption still fits what its allocated siblings left.
function countersFit(driver, pool, d, left) {
  for (const use of d.consumesCounters || []) {
    for (const [name, c] of Object.entries(use.counters || {})) {
      const k = `${driver}/${pool}/${use.counterSet}/${name}`;
      if (left.has(k) && left.get(k) < quantity(c.value)) return false;
    }
  }
  return true;
}

// Every published device with its state: allocated; unavailable (tainted); blocked (free, but
// its allocated siblings used up the shared counters it needs: a MIG partition of a GPU
// allocated whole, or the whole GPU of a partitioned one); or idle.
function devices() {
  const alloc = allocations();
  const left = countersLeft(alloc);
  const out = [];
  for (const s of objects('resourceslices')) {
    const pool = s.spec.pool?.name || '';
    for (const d of s.spec.devices || []) {
      const k = `${s.spec.driver}/${pool}/${d.name}`;
      const a = alloc.get(k);
      const taints = [...(d.taints || []), ...ruleTaints(s.spec.driver, pool, d.name)];
      const st = a ? 'allocated' : tainted(taints) ? 'unavailable'
        : countersFit(s.spec.driver, pool, d, left) ? 'idle' : 'blocked';
      out.push({driver: s.spec.driver, pool, node: s.spec.nodeName || '', device: d, taints, state: st,
                claim: a?.claim, counterSet: d.consumesCounters?.[0]?.counterSet || ''});
    }
  }
  return out;
}

function podReason(p) {
  const c = (p.status?.conditions || []).find(c => c.type === 'PodScheduled');
  if (c) return c.status === 'True' ? null : {reason: c.reason || '', message: c.message || ''};
  // Not tried yet: the scheduler waits for the claims the claim controller makes from templates
  // (why one is not made, a quota refusing it or a missing template, is in its explanation).
  const made = new Set((p.status?.resourceClaimStatuses || []).map(s => s.name));
  const waiting = (p.spec?.resourceClaims || [])
      .filter(r => r.resourceClaimTemplateName && !made.has(r.name)).map(r => r.name);
  if (!waiting.length) return null;
  return {reason: 'ClaimNotCreated',
          message: `claim ${waiting.join(', ')} not created yet (Explain says why)`};
}

// The tier a result of an allocation was made in: index -1 for an `exactly` request, else the
// index of the chosen firstAvailable subrequest (the result's request is "request/subrequest").
function tierOf(claim, result) {
  const [req, sub] = result.request.split('/');
  if (sub === undefined) return {index: -1, request: req, sub: ''};
  const r = (claim.spec.devices?.requests || []).find(r => r.name === req);
  return {index: (r?.firstAvailable || []).findIndex(s => s.name === sub), request: req, sub};
}
function tierLabel(index) { return index < 0 ? 'exactly' : `tier ${index}`; }
function chosenTier(claim, result) {
  const t = tierOf(claim, result);
  return t.index < 0 ? 'exact' : `tier ${t.index} (${t.sub})`;
}

// The fallback-tier mix: allocated requests (one per request of a claim, however many devices
// it got; the unit of draplane_allocations_total) by tier, with the subrequest names seen in
// each. Map(tier index -> {count, subs: Set}), ordered exactly, tier 0, tier 1, ...
function tierMix() {
  const mix = new Map();
  for (const c of objects('resourceclaims')) {
    const seen = new Map();  // request -> tier: a request's several devices count once
    for (const r of c.status?.allocation?.devices?.results || []) {
      const t = tierOf(c, r);
      if (!seen.has(t.request)) seen.set(t.request, t);
    }
    for (const t of seen.values()) {
      // A subrequest the claim does not name, or past upstream's limit: not a valid allocation.
      if (t.sub && (t.index < 0 || t.index >= MAX_TIERS)) continue;
      const m = mix.get(t.index) || {count: 0, subs: new Set()};
      m.count++;
      if (t.sub) m.subs.add(t.sub);
      mix.set(t.index, m);
    }
  }
  return new Map([...mix.entries()].sort((a, b) => a[0] - b[0]));
}

// --- generic paged table ----------------------------------------------------------------------
function table(id, columns, rows, rowAttrs) {
  const filter = (state.filters[id] || '').toLowerCase();
  const shown = filter ? rows.filter(r => columns.some(c => String(c.text(r)).toLowerCase().includes(filter))) : rows;
  const pages = Math.max(1, Math.ceil(shown.length / PAGE));
  const page = Math.min(state.pages[id] || 0, pages - 1);
  const slice = shown.slice(page * PAGE, page * PAGE + PAGE);
  const input = el('input', {type: 'search', 'aria-label': 'Filter', placeholder: 'filter',
                             value: state.filters[id] || ''});
  input.addEventListener('input', () => { state.filters[id] = input.value; state.pages[id] = 0; render(); 
    const again = document.querySelector(`[data-filter="${id}"]`); if (again) { again.focus(); again.setSelectionRange(again.value.length, again.value.length); } });
  input.dataset.filter = id;
  const go = d => () => { state.pages[id] = page + d; render(); };
  return el('div', {class: 'table', id},
    el('div', {class: 'pager'}, input,
      el('button', {type: 'button', onclick: go(-1), disabled: page === 0}, '‹ Previous'),
      el('span', {}, `page ${page + 1} of ${pages} (${shown.length} rows)`),
      el('button', {type: 'button', onclick: go(1), disabled: page >= pages - 1}, 'Next ›')),
    el('table', {},
      el('thead', {}, el('tr', {}, columns.map(c => el('th', {scope: 'col'}, c.title)))),
      el('tbody', {}, slice.map(r => el('tr', rowAttrs ? rowAttrs(r) : {},
          columns.map(c => el('td', {}, c.cell ? c.cell(r) : c.text(r))))))));
}

function notice(r) {
  return state.errors[r] ? el('p', {class: 'muted'}, `${r}: not shown (${state.errors[r]})`) : null;
}

// --- views ------------------------------------------------------------------------------------
function overview() {
  const devs = devices();
  const byState = {idle: 0, allocated: 0, blocked: 0, unavailable: 0};
  for (const d of devs) byState[d.state]++;
  const byDriver = new Map();
  for (const d of devs) {
    const m = byDriver.get(d.driver) || {idle: 0, allocated: 0, blocked: 0, unavailable: 0};
    m[d.state]++;
    byDriver.set(d.driver, m);
  }
  // Every Pod without a node, as the Pending view and kubectl count them: a Pod the scheduler has
  // not tried yet (or a scheduler that is down) has no PodScheduled condition.
  const pending = objects('pods').filter(unscheduled).length;
  return el('div', {},
    el('h2', {}, 'Overview'),
    el('div', {class: 'cards'},
      card('Nodes', objects('nodes').length), card('Devices', devs.length),
      card('Allocated', byState.allocated, 'state-allocated'), card('Idle', byState.idle, 'state-idle'),
      card('Blocked', byState.blocked, 'state-blocked'),
      card('Unavailable', byState.unavailable, 'state-unavailable'),
      card('Claims', objects('resourceclaims').length), card('Pending Pods', pending)),
    notice('resourceslices'),
    el('h3', {}, 'Devices by driver and state'),
    table('by-driver', [
      {title: 'Driver', text: r => r[0]},
      {title: 'Allocated', text: r => r[1].allocated}, {title: 'Idle', text: r => r[1].idle},
      {title: 'Blocked', text: r => r[1].blocked}, {title: 'Unavailable', text: r => r[1].unavailable},
      {title: 'Utilization', text: r => util(r[1]) + '%', cell: r => bar(util(r[1]))}],
      [...byDriver.entries()].sort()),
    el('h3', {id: 'utilization-title'}, 'Utilization over time'), utilizationChart(),
    el('h3', {id: 'tiers-title'}, 'Fallback tier mix over time (allocated requests by chosen tier)'),
    tierChart());
}
// Devices in use: allocated, or blocked by what their allocated siblings use.
function util(m) {
  const t = m.allocated + m.idle + m.blocked + m.unavailable;
  return t ? Math.round(100 * (m.allocated + m.blocked) / t) : 0;
}
function card(title, n, cls) { return el('div', {class: 'card'}, el('div', {}, title), el('div', {class: 'n ' + (cls || '')}, n)); }
function bar(pct) { const s = el('span'); s.style.width = pct + '%'; return el('span', {class: 'bar', role: 'img', 'aria-label': pct + '%'}, s); }

// The samples of the charts and, last, the present (so a chart is current between samples).
function samples() {
  return allLoaded() ? [...state.history, measure()] : state.history;
}

// A line chart of `series` ([{label, values: [number per sample]}]) over the samples' times,
// 0 … yMax. An image for assistive technology (labelled by `titleId` and described by a summary
// of the latest values); the numbers themselves are in the table or legend beside it.
function lineChart(titleId, times, series, yMax, summary) {
  const w = 480, h = 120;
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'chart'); svg.setAttribute('width', w); svg.setAttribute('height', h);
  svg.setAttribute('role', 'img'); svg.setAttribute('aria-labelledby', titleId);
  const desc = document.createElementNS(ns, 'desc');
  desc.textContent = summary;
  svg.append(desc);
  if (times.length > 1) {
    const t0 = times[0], span = Math.max(1, times[times.length - 1] - t0);
    series.forEach((s, i) => {
      const line = document.createElementNS(ns, 'polyline');
      line.setAttribute('fill', 'none'); line.setAttribute('stroke-width', '2');
      line.setAttribute('class', 'series-' + i);
      line.setAttribute('stroke-dasharray', DASHES[i % DASHES.length]);
      line.dataset.series = s.label;
      line.setAttribute('points', s.values.map((v, j) => `${((times[j] - t0) / span) * (w - 10) + 5},` +
          `${h - 5 - (yMax ? v / yMax : 0) * (h - 10)}`).join(' '));
      svg.append(line);
    });
  }
  return svg;
}
// Series differ in dash pattern as well as colour (style.css .series-N), so that they do not
// depend on colour vision.
const DASHES = ['', '6 3', '2 3', '8 3 2 3', '1 2', '10 4', '4 4', '12 2 2 2 2 2', '3 6'];

function utilizationChart() {
  const pts = samples();
  const last = pts[pts.length - 1];
  const pct = p => p.total ? Math.round(100 * p.allocated / p.total) : 0;
  return lineChart('utilization-title', pts.map(p => p.t),
                   [{label: 'allocated share', values: pts.map(p => pct(p))}], 100,
                   last ? `allocated share of devices over the last ${minutes(pts)}; now ${pct(last)}%` : 'no data yet');
}

// One line per tier seen in the window, drawn from the history; the legend names each with its
// dash pattern, its subrequests and the present count and share.
function tierChart() {
  const pts = samples();
  const mix = tierMix();
  const present = pts.length ? pts[pts.length - 1].tiers : {};
  const seen = [...new Set(pts.flatMap(p => Object.keys(p.tiers).map(Number)))].sort((a, b) => a - b);
  const total = Object.values(present).reduce((a, b) => a + b, 0);
  const yMax = Math.max(1, ...pts.flatMap(p => Object.values(p.tiers)));
  const share = n => total ? Math.round(100 * n / total) : 0;
  const summary = seen.length ? `allocated requests by tier over the last ${minutes(pts)}; now ` +
      seen.map(i => `${tierLabel(i)} ${present[i] || 0}`).join(', ') : 'no allocated requests';
  return el('figure', {class: 'tiers', 'aria-labelledby': 'tiers-title'},
    lineChart('tiers-title', pts.map(p => p.t),
              seen.map(i => ({label: tierLabel(i), values: pts.map(p => p.tiers[i] || 0)})), yMax, summary),
    el('ul', {class: 'legend', 'aria-label': 'tiers now'}, seen.map((i, k) => el('li',
        {'data-tier': tierLabel(i), 'data-count': present[i] || 0},
        legendSwatch(k), `${tierLabel(i)}` +
        (mix.get(i)?.subs.size ? ` (${[...mix.get(i).subs].sort().join(', ')})` : '') +
        `: ${present[i] || 0} now, ${share(present[i] || 0)}%`))));
}
function legendSwatch(k) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('width', 24); svg.setAttribute('height', 8); svg.setAttribute('aria-hidden', 'true');
  const line = document.createElementNS(ns, 'line');
  line.setAttribute('x1', 0); line.setAttribute('y1', 4); line.setAttribute('x2', 24); line.setAttribute('y2', 4);
  line.setAttribute('stroke-width', 2); line.setAttribute('class', 'series-' + k);
  line.setAttribute('stroke-dasharray', DASHES[k % DASHES.length]);
  svg.append(line);
  return svg;
}
function minutes(pts) {
  const m = pts.length > 1 ? Math.round((pts[pts.length - 1].t - pts[0].t) / 60000) : 0;
  return m < 1 ? 'minute' : `${m} minutes`;
}

function nodesView(selected) {
  const devs = devices();
  const perNode = new Map();
  for (const d of devs) {
    const m = perNode.get(d.node) || [];
    m.push(d);
    perNode.set(d.node, m);
  }
  const rows = objects('nodes').sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const out = el('div', {}, el('h2', {}, 'Nodes'), notice('nodes'), notice('resourceslices'),
    table('nodes', [
      {title: 'Node', text: n => n.metadata.name,
       cell: n => el('a', {href: '#/nodes/' + encodeURIComponent(n.metadata.name)}, n.metadata.name)},
      {title: 'Ready', text: n => (n.status?.conditions || []).find(c => c.type === 'Ready')?.status || '?'},
      {title: 'Taints', text: n => (n.spec?.taints || []).map(t => `${t.key}:${t.effect}`).join(', ')},
      {title: 'Devices', text: n => (perNode.get(n.metadata.name) || []).length},
      {title: 'Allocated', text: n => (perNode.get(n.metadata.name) || []).filter(d => d.state === 'allocated').length},
      {title: 'Unavailable', text: n => (perNode.get(n.metadata.name) || []).filter(d => d.state === 'unavailable').length}],
      rows, n => ({'data-node': n.metadata.name})));
  if (selected) out.append(nodeDetail(selected, perNode.get(selected) || []));
  return out;
}

// A node's devices: partitions drawn inside their physical device (the counter set they draw
// from), the others one by one.
function nodeDetail(name, devs) {
  const groups = new Map();
  for (const d of devs) {
    const g = d.counterSet ? `${d.pool}/${d.counterSet}` : `${d.pool}/${d.device.name}`;
    const list = groups.get(g) || [];
    list.push(d);
    groups.set(g, list);
  }
  return el('section', {'aria-label': 'devices of ' + name, id: 'node-detail'},
    el('h3', {}, `Devices of ${name}`),
    [...groups.entries()].sort().map(([g, list]) => el('div', {class: 'gpu', 'data-physical': g},
      el('h4', {}, `${list[0].driver} ${g.split('/').slice(1).join('/')}` +
        (list.length > 1 ? ` — ${list.length} partitions` : '')),
      list.map(d => el('span', {class: 'chip ' + d.state, title: d.claim ? 'allocated to ' + d.claim : d.state,
                                'data-device': d.device.name},
        d.device.name, d.claim ? ` → ${d.claim}` : '',
        d.taints.length ? ` [tainted ${d.taints.map(taintText).join(', ')}]` : '')))));
}

function claimsView() {
  const pods = new Map(objects('pods').map(p => [p.metadata.uid, p]));
  const rows = objects('resourceclaims').sort((a, b) => key(a).localeCompare(key(b)));
  return el('div', {}, el('h2', {}, 'Resource claims'), notice('resourceclaims'),
    table('claims', [
      {title: 'Namespace', text: c => c.metadata.namespace},
      {title: 'Claim', text: c => c.metadata.name},
      {title: 'State', text: c => c.status?.allocation ? ((c.status.reservedFor || []).length ? 'allocated,reserved' : 'allocated') : 'pending'},
      {title: 'Devices', text: c => (c.status?.allocation?.devices?.results || []).map(r => `${r.pool}/${r.device}`).join(' ')},
      {title: 'Subrequest', text: c => (c.status?.allocation?.devices?.results || []).map(r => chosenTier(c, r)).join(', ')},
      {title: 'Pod', text: c => (c.status?.reservedFor || []).map(r => r.name).join(', ')},
      {title: 'Pod phase', text: c => (c.status?.reservedFor || []).map(r => pods.get(r.uid)?.status?.phase || '').join(', ')}],
      rows, c => ({'data-claim': key(c)})));
}

function pendingView() {
  const rows = objects('pods').filter(unscheduled).sort((a, b) => key(a).localeCompare(key(b)));
  return el('div', {}, el('h2', {}, 'Pending Pods'), notice('pods'),
    table('pending', [
      {title: 'Namespace', text: p => p.metadata.namespace},
      {title: 'Pod', text: p => p.metadata.name},
      {title: 'Reason', text: p => podReason(p)?.reason || 'not yet scheduled'},
      {title: 'Why (draplane explain pod)', text: p => podReason(p)?.message || '',
       cell: p => el('div', {}, explanation(podReason(p)?.message || ''), explainCell(p))},
      {title: 'Waiting', text: p => age(p.metadata.creationTimestamp)}],
      rows, p => ({'data-pod': key(p)})));
}
// The scheduler's message, one line per reason (its "; "-separated parts) as a tree.
function explanation(msg) {
  const parts = msg.split(/;\s+|\n/).filter(Boolean);
  if (parts.length <= 1) return msg;
  return el('ul', {}, parts.map(p => el('li', {}, p)));
}
// The explanation tree of `draplane explain pod`, from the server's draplane.dev PodExplanation
// (computed there with the viewer's own permissions checked), fetched when asked for: the server
// limits how many are computed at once, so the page never asks for every Pod.
function explainCell(p) {
  const k = key(p);
  const e = state.explain[k] || {};
  const id = 'explain-' + k;
  const button = el('button', {type: 'button', 'data-explain': k, 'aria-expanded': e.shown ? 'true' : 'false',
                               'aria-controls': id, onclick: () => toggleExplain(p)},
                    e.shown ? 'Hide explanation' : 'Explain');
  if (!e.shown) return button;
  const body = e.loading ? el('p', {class: 'muted'}, 'explaining…')
      : e.error ? el('p', {class: 'error'}, e.error) : explainTree(k, e.data.status || {});
  return el('div', {}, button, el('div', {id, class: 'explain', 'data-explanation': k}, body));
}

async function toggleExplain(p) {
  const k = key(p);
  const e = state.explain[k] || (state.explain[k] = {});
  e.shown = !e.shown;
  if (!e.shown) { render(); return; }
  Object.assign(e, {loading: true, error: '', data: null});
  render();
  const path = `/apis/draplane.dev/v1alpha1/namespaces/${encodeURIComponent(p.metadata.namespace)}` +
      `/podexplanations/${encodeURIComponent(p.metadata.name)}`;
  try {
    const res = await api(path);
    const body = await res.json().catch(() => ({}));
    if (res.ok) e.data = body; else e.error = `${res.status}: ${body.message || res.statusText}`;
  } catch (err) {
    e.error = String(err);
  }
  e.loading = false;
  render();
}

// A branch of the tree: a <details> whose summary is keyboard-operable (Enter or Space toggles
// it); its children are built only while it is open, so a tree over hundreds of nodes stays
// small. Open branches survive re-rendering (state.open).
function branch(id, label, children, cls) {
  const d = el('details', {class: cls, open: state.open.has(id)},
               el('summary', {'data-tree': id}, label));
  d.addEventListener('toggle', () => {
    if (d.open === state.open.has(id)) return;
    if (d.open) state.open.add(id); else state.open.delete(id);
    render();
  });
  if (state.open.has(id)) d.append(el('ul', {}, children().map(c => el('li', {}, c))));
  return d;
}

function explainTree(k, x) {
  const claims = (x.claims || []).map(c => `${c.podClaim}: ${c.claim || '-'} (${c.state})` +
      ((c.devices || []).length ? ' ' + c.devices.join(', ') : '') +
      ((c.reservedFor || []).length ? ' reserved for ' + c.reservedFor.join(', ') : '') +
      (c.creationFailure ? ' creation failed: ' + c.creationFailure.message : ''));
  const nodes = x.nodes || [];
  const fit = nodes.filter(n => n.fits).length;
  return el('div', {class: 'tree', role: 'group', 'aria-label': 'explanation of ' + k},
    el('p', {'data-tree-summary': k}, x.summary || ''),
    x.preFilter ? el('p', {}, 'before the nodes: ' + x.preFilter) : null,
    el('ul', {},
      claims.length ? el('li', {}, branch(`${k}/claims`, `Claims (${claims.length})`, () => claims)) : null,
      (x.quotas || []).length ? el('li', {}, branch(`${k}/quotas`, `Quotas (${x.quotas.length})`, () => x.quotas)) : null,
      nodes.length ? el('li', {}, branch(`${k}/nodes`, `Nodes: ${fit} of ${nodes.length} fit`,
          () => nodes.map(n => nodeBranch(`${k}/node/${n.node}`, n)))) : null));
}

function nodeBranch(id, n) {
  const label = `${n.node}: ` + (n.fits ? 'fits' : `${n.plugin}: ${n.reason}`);
  if (!n.devices) return el('span', {'data-tree-node': n.node}, label);
  const d = n.devices;
  const b = branch(id, label, () => [
    el('span', {}, d.summary || ''),
    ...(d.pools || []).map(p => `pool ${p.driver}/${p.pool}: ${p.status}` + (p.reason ? ` (${p.reason})` : '') +
        `, ${p.devices} devices`),
    ...(d.claims || []).map(c => branch(`${id}/claim/${c.claim}`,
        `claim ${c.claim}: ${c.allocated ? 'allocated' : 'not allocated'}` +
        ((c.constraints || []).length ? ' — ' + c.constraints.join('; ') : ''),
        () => (c.requests || []).map(r => requestBranch(`${id}/claim/${c.claim}/${r.name}`, r))))]);
  b.dataset.treeNode = n.node;
  return b;
}

function requestBranch(id, r) {
  const shape = [r.deviceClassName, r.allocationMode, r.count, r.adminAccess && 'adminAccess'].filter(Boolean);
  const head = `request ${r.name}${shape.length ? ` (${shape.join(', ')})` : ''}: ${r.outcome || ''}`;
  return branch(id, head, () => [
    ...(r.candidates || []).map(c => el('span', {class: 'candidate ' + (c.status || '')},
        `${c.driver}/${c.pool}/${c.device}: ${c.status}` + (c.detail ? ` — ${c.detail}` : ''))),
    ...(r.subrequests || []).map(s => requestBranch(`${id}/${s.name}`, s))]);
}

// How long since `ts` (an object's timestamp) on the server's clock.
function age(ts) { return ts ? duration(serverNow() - Date.parse(ts)) : ''; }
function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}
// A Pod the scheduler has not placed yet (what the Pending Pods view lists).
function unscheduled(p) { return !p.spec.nodeName; }

function tenantsView() {
  const tenants = new Map();
  const t = ns => tenants.get(ns) || tenants.set(ns, {ns, pods: 0, created: [], claims: 0, devices: 0, quotas: []}).get(ns);
  for (const p of objects('pods')) {
    const x = t(p.metadata.namespace);
    x.pods++;
    if (unscheduled(p)) x.created.push(Date.parse(p.metadata.creationTimestamp));
  }
  // Waits of the Pending Pods (since creation, on the server's clock: state.clockOffset), the
  // oldest and the median (of an even count, the mean of the middle two).
  const now = serverNow();
  for (const x of tenants.values()) {
    const waits = x.created.filter(c => !Number.isNaN(c)).map(c => Math.max(0, now - c)).sort((a, b) => b - a);
    const mid = waits.length >> 1;
    x.pending = x.created.length;
    x.oldest = waits.length ? waits[0] : null;
    x.median = !waits.length ? null : waits.length % 2 ? waits[mid] : (waits[mid - 1] + waits[mid]) / 2;
  }
  for (const c of objects('resourceclaims')) {
    const x = t(c.metadata.namespace);
    x.claims++;
    x.devices += (c.status?.allocation?.devices?.results || []).length;
  }
  for (const q of objects('resourcequotas')) t(q.metadata.namespace).quotas.push(q);
  return el('div', {}, el('h2', {}, 'Tenants'), notice('resourcequotas'),
    table('tenants', [
      {title: 'Namespace', text: x => x.ns},
      {title: 'Pods', text: x => x.pods}, {title: 'Pending', text: x => x.pending},
      {title: 'Longest wait', text: x => x.oldest === null ? '' : duration(x.oldest)},
      {title: 'Median wait', text: x => x.median === null ? '' : duration(x.median)},
      {title: 'Claims', text: x => x.claims}, {title: 'Allocated devices', text: x => x.devices},
      {title: 'Quota (used / hard)', text: x => x.quotas.flatMap(q => Object.entries(q.status?.hard || q.spec?.hard || {})
          .map(([k, v]) => `${k}: ${(q.status?.used || {})[k] || '0'} / ${v}`)).join('; ')}],
      [...tenants.values()].sort((a, b) => a.ns.localeCompare(b.ns)),
      x => ({'data-tenant': x.ns, 'data-pending': x.pending, 'data-oldest-wait-ms': x.oldest ?? undefined,
             'data-median-wait-ms': x.median ?? undefined})));
}

function taintsView() {
  return el('div', {}, el('h2', {}, 'Device taint rules'), notice('devicetaintrules'),
    table('taints', [
      {title: 'Rule', text: r => r.metadata.name},
      {title: 'Effect', text: r => r.spec.taint?.effect || ''},
      {title: 'Selects', text: r => JSON.stringify(r.spec.deviceSelector || {})},
      {title: 'Blast radius (status)', text: r => (r.status?.conditions || []).map(c => `${c.reason}: ${c.message}`).join(' ')}],
      objects('devicetaintrules')));
}

// --- shell ------------------------------------------------------------------------------------
function route() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  return {view: parts[0] || 'overview', arg: parts[1] || ''};
}

function render() {
  const view = document.getElementById('view');
  const login = document.getElementById('login');
  if (!state.token) {
    login.hidden = false;
    view.replaceChildren();
    return;
  }
  login.hidden = true;
  const {view: v, arg} = route();
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.view === v) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  const focused = document.activeElement?.dataset?.filter;
  // Re-rendering replaces the page: the tree branch or Explain button that had the focus keeps it.
  const focusedTree = document.activeElement?.dataset?.tree;
  const focusedExplain = document.activeElement?.dataset?.explain;
  // The first sample as soon as everything has been listed, then every SAMPLE_MS.
  if (allLoaded() && !state.history.length) sample();
  const content = {overview, nodes: () => nodesView(arg), claims: claimsView, pending: pendingView,
                   tenants: tenantsView, taints: taintsView}[v] || overview;
  view.replaceChildren(content());
  if (focused) document.querySelector(`[data-filter="${focused}"]`)?.focus();
  if (focusedTree) document.querySelector(`[data-tree="${CSS.escape(focusedTree)}"]`)?.focus();
  if (focusedExplain) document.querySelector(`[data-explain="${CSS.escape(focusedExplain)}"]`)?.focus();
  document.body.dataset.loaded = allLoaded() ? 'true' : 'false';
}

function allLoaded() {
  return state.loaded.size >= Object.keys(RESOURCES).reduce((n, r) => n + urlsFor(r).length, 0);
}

// The charts' numbers now: devices in use (allocated or blocked, as util) of all, and allocated
// requests by tier.
function measure() {
  const devs = devices();
  const tiers = {};
  for (const [i, m] of tierMix()) tiers[i] = m.count;
  const used = devs.filter(d => d.state === 'allocated' || d.state === 'blocked').length;
  return {t: Date.now(), allocated: used, total: devs.length, tiers};
}

function sample() {
  if (!allLoaded()) return;
  state.history.push(measure());
  if (state.history.length > HISTORY) state.history.shift();
}

async function start() {
  render();
  if (!state.token) return;
  const who = await api('/apis/authentication.k8s.io/v1/selfsubjectreviews', {method: 'POST',
    headers: {'Authorization': 'Bearer ' + state.token, 'Content-Type': 'application/json'},
    body: JSON.stringify({apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview'})});
  if (who.status === 401) { signOut('The token was not accepted (401).'); return; }
  const review = await who.json().catch(() => ({}));
  document.getElementById('who').textContent = 'signed in as ' + (review.status?.userInfo?.username || '?') +
      (state.namespaces.length ? ' (namespaces ' + state.namespaces.join(', ') + ')' : '');
  // The fast-changing kinds start first, so that they get the streams.
  const order = ['pods', 'resourceclaims', 'resourceslices', 'nodes', 'devicetaintrules', 'resourcequotas'];
  for (const r of order) for (const url of urlsFor(r)) listAndWatch(r, url);
  clearInterval(state.sampler);
  state.sampler = setInterval(() => { sample(); if (route().view === 'overview') changed(); }, SAMPLE_MS);
}

function signOut(message) {
  for (const c of state.aborts) c.abort();
  state.aborts = [];
  state.token = '';
  state.data = {};
  state.loaded = new Set();
  state.history = [];
  clearInterval(state.sampler);
  sessionStorage.removeItem('draplane.token');
  document.getElementById('who').textContent = '';
  document.getElementById('login-error').textContent = message || '';
  render();
}

window.addEventListener('hashchange', render);
document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('login').addEventListener('submit', e => {
    e.preventDefault();
    state.token = document.getElementById('token').value.trim();
    state.namespaces = document.getElementById('namespaces').value.split(',').map(s => s.trim()).filter(Boolean);
    sessionStorage.setItem('draplane.token', state.token);
    sessionStorage.setItem('draplane.namespaces', state.namespaces.join(','));
    document.getElementById('login-error').textContent = '';
    start();
  });
  document.getElementById('logout').addEventListener('click', () => signOut(''));
  start();
});
