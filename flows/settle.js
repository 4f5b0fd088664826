// The settle page's keys, decisions and export (flows/settle.py writes the page around this script).
'use strict';
const data = JSON.parse(document.getElementById('settle-data').textContent);
const sections = Array.from(document.querySelectorAll('section.rec'));
const total = data.rows.length;
const storeKey = `formwork-settle:${data.page}`;
const AREAS = ['localStorage', 'sessionStorage'];  // as the audit page: a file page's storage may be lost
function count(kept) { return Object.values(kept.answers).reduce((n, a) => n + Object.keys(a).length, 0); }
function load() {
  let best = {answers: {}, at: [0, 0]};
  for (const area of AREAS) {
    try { const kept = JSON.parse(window[area].getItem(storeKey)); if (kept && count(kept) > count(best)) best = kept; }
    catch (e) { /* nothing kept there */ }
  }
  return best;
}
let state = load();
let rec = Math.min(state.at[0], Math.max(total - 1, 0)), at = state.at[1];
let editing = null;

function say(text, bad) { const box = document.getElementById('msg'); box.textContent = text; box.className = bad ? 'bad' : ''; }
function save() {
  state.at = [rec, at];
  for (const area of AREAS) {
    try { window[area].setItem(storeKey, JSON.stringify(state)); }
    catch (e) { say(`decisions are not saved in this browser's ${area} (${e.name}): export before closing`, true); }
  }
}
function openOf(i) { return data.rows[i].open; }
function answersOf(i) { return state.answers[i] || {}; }
function isDone(i) { const a = answersOf(i); return openOf(i).every(f => a[f]); }
function cell(i, name) { return sections[i].querySelector(`tr[data-f="${CSS.escape(name)}"] td.ans`); }
function paint(i, name) {
  const c = cell(i, name), a = answersOf(i)[name];
  c.textContent = '';
  if (!a) return;
  const tag = document.createElement('span');
  tag.className = a.action;
  tag.textContent = a.action === 'accept' ? 'accepted' : a.action === 'none' ? 'none in the text' : `fixed → ${JSON.stringify(a.value)}`;
  c.appendChild(tag);
}
function show() {
  if (!total) { document.getElementById('progress').textContent = 'nothing to settle'; return; }
  sections.forEach((s, i) => { s.hidden = i !== rec; });
  const open = openOf(rec);
  at = Math.max(0, Math.min(open.length - 1, at));
  sections[rec].querySelectorAll('tr.frow').forEach(r => r.classList.toggle('focus', r.dataset.f === open[at]));
  // only the focused value's evidence stays highlighted: the eye goes straight to it
  const colour = data.fields[open[at]].colour;
  document.getElementById('dyn').textContent = `.text mark:not(.f${colour}){background:transparent!important}`;
  const done = data.rows.filter((_, i) => isDone(i)).length;
  const given = data.rows.reduce((n, _, i) => n + Object.keys(answersOf(i)).length, 0);
  const all = data.rows.reduce((n, r) => n + r.open.length, 0);
  document.getElementById('progress').textContent = `${done} of ${total} rows settled (${given} of ${all} values)`;
}
function firstOpen(i) { const a = answersOf(i); const j = openOf(i).findIndex(f => !a[f]); return j < 0 ? 0 : j; }
function nextRow() {
  if (rec < total - 1) { rec += 1; at = firstOpen(rec); } else { say(isDone(rec) ? 'last row settled: press e to export' : 'this is the last row'); }
}
function answer(action, value) {
  const name = openOf(rec)[at];
  (state.answers[rec] = state.answers[rec] || {})[name] = {action, value, at: new Date().toISOString()};
  paint(rec, name);
  const a = answersOf(rec), open = openOf(rec);
  const next = open.findIndex((f, j) => j > at && !a[f]), any = open.findIndex(f => !a[f]);
  if (next >= 0) at = next; else if (any >= 0) at = any; else nextRow();  // the next row at once
  save();
  show();
}
function parse(name, text) {
  const kind = data.fields[name], t = text.trim();
  if (t === '') throw new Error('type the value (Esc, then n, for none in the text)');
  if (kind.kind === 'number' || kind.kind === 'integer') {
    if (!/^-?\d+(\.\d+)?$/.test(t)) throw new Error('type a plain number, like 42.8');
    const n = Number(t);
    if (kind.kind === 'integer' && !Number.isInteger(n)) throw new Error('type a whole number');
    return n;
  }
  if (kind.kind === 'boolean') {
    if (/^(true|yes)$/i.test(t)) return true;
    if (/^(false|no)$/i.test(t)) return false;
    throw new Error('type true or false');
  }
  if (kind.kind === 'enum') {
    const found = kind.options.find(o => String(o).toLowerCase() === t.toLowerCase());
    if (found === undefined) throw new Error(`one of: ${kind.options.join(', ')}`);
    return found;
  }
  if (kind.kind === 'json') return JSON.parse(t);
  return t;
}
function startEdit() {
  const name = openOf(rec)[at], c = cell(rec, name), shown = data.rows[rec].values[name].value;
  const input = document.createElement('input');
  input.value = shown === null ? '' : typeof shown === 'string' ? shown : JSON.stringify(shown);
  input.setAttribute('aria-label', `the value of ${name}`);
  c.textContent = '';
  if (data.fields[name].kind === 'enum') {
    const list = document.createElement('datalist');
    list.id = `options-${rec}-${at}`;
    for (const o of data.fields[name].options) { const opt = document.createElement('option'); opt.value = o; list.appendChild(opt); }
    c.appendChild(list);
    input.setAttribute('list', list.id);
  }
  c.appendChild(input);
  editing = {input, c, name};
  input.focus();
  input.select();
}
function endEdit(keep) {
  const {input, c, name} = editing;
  if (!keep) { editing = null; paint(rec, name); return; }
  try {
    const value = parse(name, input.value);
    editing = null;
    answer('fix', value);
  } catch (e) {
    let err = c.querySelector('.err');
    if (!err) { err = document.createElement('div'); err.className = 'err'; c.appendChild(err); }
    err.textContent = e.message;
  }
}
function exportFile() {
  const lines = [];
  data.rows.forEach((r, i) => {
    for (const [field, a] of Object.entries(answersOf(i))) {
      const read = r.values[field];
      lines.push(JSON.stringify({run: data.run, record: r.key, record_id: r.record_id, field, action: a.action,
        value: a.action === 'accept' ? read.value : a.action === 'none' ? null : a.value,
        model_value: read.value, model_state: read.state, at: a.at}));
    }
  });
  if (!lines.length) { say('nothing to export yet: settle a value first', true); return; }
  const name = `settle-run-${data.run}.jsonl`, link = document.createElement('a');
  link.href = URL.createObjectURL(new Blob([lines.join('\n') + '\n'], {type: 'application/x-ndjson'}));
  link.download = name;
  document.body.appendChild(link);
  link.click();
  link.remove();
  const open = data.rows.filter((_, i) => !isDone(i)).length;
  say(`exported ${lines.length} decisions to ${name}` + (open ? `; ${open} rows not settled yet` : ''), open > 0);
}
document.addEventListener('keydown', event => {
  if (editing) {
    if (event.key === 'Enter') { event.preventDefault(); endEdit(true); }
    else if (event.key === 'Escape') { event.preventDefault(); endEdit(false); }
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey || !total) return;
  const keys = {
    a: () => answer('accept'), n: () => answer('none', null), f: startEdit,
    Enter: () => { nextRow(); save(); show(); }, j: () => { nextRow(); save(); show(); },
    k: () => { if (rec > 0) { rec -= 1; at = firstOpen(rec); } save(); show(); },
    ArrowDown: () => { at += 1; save(); show(); }, ArrowUp: () => { at -= 1; save(); show(); },
    e: exportFile,
  };
  if (keys[event.key]) { event.preventDefault(); keys[event.key](); }
});
document.getElementById('export').addEventListener('click', exportFile);
sections.forEach((_, i) => openOf(i).forEach(f => paint(i, f)));
show();
