// The audit page's keys, answers and export (flows/audit.py writes the page around this script).
'use strict';
const data = JSON.parse(document.getElementById('audit-data').textContent);
const fields = data.fields.map(f => f.name);
const kinds = Object.fromEntries(data.fields.map(f => [f.name, f]));
const sections = Array.from(document.querySelectorAll('section.rec'));
const boxes = Array.from(document.querySelectorAll('#strip .box'));
const total = data.records.length;
// The page's own key (flows/audit.py: the database and every text and value shown): answers given on
// another database's page of the same run number, seed and records never come back here.
const storeKey = `formwork-audit:${data.page}`;
// A file: page's local storage is left undefined by the standard (MDN), and a browser may lose it on a
// reload; the tab's session storage keeps a copy that a reload keeps, local storage one a closed tab keeps.
const AREAS = ['localStorage', 'sessionStorage'];
function given(kept) { return Object.values(kept.answers).reduce((n, a) => n + Object.keys(a).length, 0); }
function load() {
  let best = {answers: {}, at: [0, 0]};
  for (const area of AREAS) {
    try {
      const kept = JSON.parse(window[area].getItem(storeKey));
      if (kept && given(kept) > given(best)) best = kept;
    } catch (e) { /* nothing kept there */ }
  }
  return best;
}
let state = load();
let rec = Math.min(state.at[0], total - 1), at = Math.min(state.at[1], fields.length - 1);
let editing = null;

function say(text, bad) {
  const box = document.getElementById('msg');
  box.textContent = text;
  box.className = bad ? 'bad' : '';
}
function save() {
  state.at = [rec, at];
  const text = JSON.stringify(state);
  for (const area of AREAS) {
    try { window[area].setItem(storeKey, text); }
    catch (e) { say(`answers are not saved in this browser's ${area} (${e.name}): export before closing`, true); }
  }
}
function answersOf(i) { return state.answers[i] || {}; }
function isDone(i) { const a = answersOf(i); return fields.every(f => a[f]); }

function paintAnswer(i, name) {
  const cell = sections[i].querySelector(`tr[data-f="${CSS.escape(name)}"] td.ans`);
  const a = answersOf(i)[name];
  cell.textContent = '';
  if (!a) return;
  const tag = document.createElement('span');
  tag.className = a.mark;
  tag.textContent = a.mark === 'right' ? 'right' : a.mark === 'none' ? 'none in the text'
    : `wrong → ${JSON.stringify(a.value)}`;
  cell.appendChild(tag);
}
function show() {
  sections.forEach((s, i) => { s.hidden = i !== rec; });
  const rows = sections[rec].querySelectorAll('tr.frow');
  rows.forEach((r, j) => r.classList.toggle('focus', j === at));
  boxes.forEach((b, i) => {
    b.className = 'box' + (isDone(i) ? ' done' : Object.keys(answersOf(i)).length ? ' some' : '')
      + (i === rec ? ' cur' : '');
  });
  const done = data.records.filter((_, i) => isDone(i)).length;
  const given = data.records.reduce((n, _, i) => n + Object.keys(answersOf(i)).length, 0);
  document.getElementById('progress').textContent =
    `${done} of ${total} records done (${given} of ${total * fields.length} answers)`;
  rows[at].scrollIntoView({block: 'nearest'});
}
function firstOpen(i) { const a = answersOf(i); const j = fields.findIndex(f => !a[f]); return j < 0 ? 0 : j; }
function advance() {
  const a = answersOf(rec);
  const next = fields.findIndex((f, j) => j > at && !a[f]);
  if (next >= 0) { at = next; return; }
  const open = fields.findIndex(f => !a[f]);
  if (open >= 0) { at = open; return; }
  if (rec < total - 1) { rec += 1; at = firstOpen(rec); } else { say('last record done: press e to export'); }
}
function answer(mark, value) {
  (state.answers[rec] = state.answers[rec] || {})[fields[at]] = {mark, value};
  paintAnswer(rec, fields[at]);
  advance();
  save();
  show();
}

function parse(name, text) {
  const kind = kinds[name].kind, t = text.trim();
  if (t === '') throw new Error('type the right value (Esc, then n, for none in the text)');
  if (kind === 'number' || kind === 'integer') {
    if (!/^-?\d+(\.\d+)?$/.test(t)) throw new Error('type a plain number, like 42.8');
    const n = Number(t);
    if (kind === 'integer' && !Number.isInteger(n)) throw new Error('type a whole number');
    return n;
  }
  if (kind === 'boolean') {
    if (/^(true|yes)$/i.test(t)) return true;
    if (/^(false|no)$/i.test(t)) return false;
    throw new Error('type true or false');
  }
  if (kind === 'enum') {
    const found = kinds[name].options.find(o => String(o).toLowerCase() === t.toLowerCase());
    if (found === undefined) throw new Error(`one of: ${kinds[name].options.join(', ')}`);
    return found;
  }
  if (kind === 'json') return JSON.parse(t);
  return t;
}
// Whether a typed right value is the value the run read: "wrong" with the run's own value would be
// counted right (`formwork audit check` ignores it, warning), so the page refuses it. Strings as the
// text rule compares them (Unicode NFKC, spaces, case); numbers as numbers; lists and objects as JSON.
function canonical(value) {
  if (typeof value === 'string') return 's' + value.normalize('NFKC').replace(/\s+/g, ' ').trim().toLowerCase();
  if (Array.isArray(value)) return '[' + value.map(canonical).join(',') + ']';
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return '{' + keys.map(k => JSON.stringify(k) + ':' + canonical(value[k])).join(',') + '}';
  }
  return JSON.stringify(value);
}
function startEdit() {
  const name = fields[at], cell = sections[rec].querySelector(`tr[data-f="${CSS.escape(name)}"] td.ans`);
  const input = document.createElement('input');
  const shown = data.records[rec].values[name];
  input.value = shown === null ? '' : typeof shown === 'string' ? shown : JSON.stringify(shown);
  input.setAttribute('aria-label', `the right value of ${name}`);
  if (kinds[name].kind === 'enum') {
    const list = document.createElement('datalist');
    list.id = `options-${rec}-${at}`;
    for (const o of kinds[name].options) { const opt = document.createElement('option'); opt.value = o; list.appendChild(opt); }
    cell.textContent = '';
    cell.appendChild(list);
    input.setAttribute('list', list.id);
  } else {
    cell.textContent = '';
  }
  cell.appendChild(input);
  editing = {input, cell, name};
  input.focus();
  input.select();
}
function endEdit(keep) {
  const {input, cell, name} = editing;
  if (!keep) { editing = null; paintAnswer(rec, name); return; }
  try {
    const value = parse(name, input.value);
    if (canonical(value) === canonical(data.records[rec].values[name])) {
      throw new Error('that is the value the run read: Esc, then r if it is right; else type the right '
        + 'value (Esc, then n, for none in the text)');
    }
    editing = null;
    answer('wrong', value);
  } catch (e) {
    let err = cell.querySelector('.err');
    if (!err) { err = document.createElement('div'); err.className = 'err'; cell.appendChild(err); }
    err.textContent = e.message;
  }
}

function exported() {
  const lines = [], open = [];
  data.records.forEach((r, i) => {
    if (!isDone(i)) { open.push(r.id); return; }
    const a = answersOf(i), gold = {}, marks = {};
    for (const f of fields) {
      gold[f] = a[f].mark === 'right' ? r.values[f] : a[f].mark === 'none' ? null : a[f].value;
      marks[f] = a[f].mark;
    }
    const meta = {run: data.run, record: r.key, record_id: r.record_id, seed: data.seed, audited: marks};
    lines.push(JSON.stringify({id: r.id, text: r.text, gold, meta}));
  });
  return {lines, open};
}
function exportFile() {
  const {lines, open} = exported();
  if (!lines.length) { say('nothing to export yet: answer every field of a record first', true); return; }
  const name = `audit-run-${data.run}.jsonl`;
  const link = document.createElement('a');
  link.href = URL.createObjectURL(new Blob([lines.join('\n') + '\n'], {type: 'application/x-ndjson'}));
  link.download = name;
  document.body.appendChild(link);
  link.click();
  link.remove();
  const rest = open.length ? `; ${open.length} not finished (${open.slice(0, 5).join(', ')}${open.length > 5 ? ', …' : ''})` : '';
  say(`exported ${lines.length} of ${total} records to ${name}${rest}`, open.length > 0);
}

function move(record, field) {
  rec = Math.max(0, Math.min(total - 1, record));
  at = Math.max(0, Math.min(fields.length - 1, field));
  save();
  show();
}
function go(record) { const to = Math.max(0, Math.min(total - 1, record)); move(to, firstOpen(to)); }
document.addEventListener('keydown', event => {
  if (editing) {
    if (event.key === 'Enter') { event.preventDefault(); endEdit(true); }
    else if (event.key === 'Escape') { event.preventDefault(); endEdit(false); }
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const keys = {
    r: () => answer('right'), '1': () => answer('right'),
    n: () => answer('none', null), '0': () => answer('none', null),
    w: startEdit, '2': startEdit,
    ArrowDown: () => move(rec, at + 1), j: () => move(rec, at + 1),
    ArrowUp: () => move(rec, at - 1), k: () => move(rec, at - 1),
    ArrowRight: () => go(rec + 1), PageDown: () => go(rec + 1),
    ArrowLeft: () => go(rec - 1), PageUp: () => go(rec - 1),
    e: exportFile,
  };
  if (keys[event.key]) { event.preventDefault(); keys[event.key](); }
});
document.getElementById('export').addEventListener('click', exportFile);
boxes.forEach((b, i) => b.addEventListener('click', () => go(i)));
sections.forEach((s, i) => s.querySelectorAll('tr.frow').forEach((r, j) => r.addEventListener('click', () => move(i, j))));
sections.forEach((_, i) => fields.forEach(f => paintAnswer(i, f)));
show();
