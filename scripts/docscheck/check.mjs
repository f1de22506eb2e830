// check.mjs: the docs check of `make lint`.
//
// For every Markdown file git tracks (or the files named as arguments):
//   - every ```mermaid block parses with Mermaid's own parser, and every
//     label keeps its text when rendered (Mermaid passes labels through
//     DOMPurify, which swallows anything that looks like an HTML tag, such
//     as <merchant>: write #lt;merchant#gt; instead);
//   - every relative link points at a file that exists, and every #anchor
//     at a heading (GitHub's slugs) or an explicit id in that file;
//   - a prose reference to a section, `page.md, "Heading"` (or with the
//     page linked), names a heading that page has;
//   - a number marked as quoted from a results table,
//     `8.5×<!-- quote: docs/PERFORMANCE.md "replay vs fresh" -->`, is the
//     bold value (the median) of that table row in that file;
//   - README.md is at most 16 KiB and each page under docs/ at most 20 KiB;
//   - LICENSE exists.
// It prints one line per problem (file:line: what) and exits 1 if any.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { JSDOM } from 'jsdom';

const root = execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim();
const limits = [
  { test: (f) => f === 'README.md', max: 16 * 1024 },
  { test: (f) => f.startsWith('docs/') && f.endsWith('.md'), max: 20 * 1024 },
];

const dom = new JSDOM('<!doctype html><html><body></body></html>', { pretendToBeVisual: true });
globalThis.window = dom.window;
globalThis.document = dom.window.document;
globalThis.DOMParser = dom.window.DOMParser;
globalThis.Element = dom.window.Element;
const { default: mermaid } = await import('mermaid');
const { default: createDOMPurify } = await import('dompurify');
const purify = createDOMPurify(dom.window);
mermaid.initialize({ startOnLoad: false });

const problems = [];
const report = (file, line, what) => problems.push(`${file}:${line}: ${what}`);

const files = process.argv.length > 2
  ? process.argv.slice(2).map((f) => path.relative(root, path.resolve(f)))
  : execFileSync('git', ['ls-files', '*.md'], { cwd: root, encoding: 'utf8' })
    .split('\n').filter((f) => f && !f.includes('node_modules/') && !f.startsWith('scripts/docscheck/testdata/'));

if (!existsSync(path.join(root, 'LICENSE'))) report('LICENSE', 0, 'missing');

const headingCache = new Map();
for (const file of files) {
  const text = readFileSync(path.join(root, file), 'utf8');
  for (const { test, max } of limits) {
    const size = statSync(path.join(root, file)).size;
    if (test(file) && size > max) report(file, 1, `${size} bytes, over the limit of ${max}`);
  }
  await checkMermaid(file, text);
  checkLinks(file, text);
  checkSectionRefs(file, text);
  checkQuotes(file, text);
}

for (const p of problems) console.log(p);
console.log(`docscheck: ${files.length} files, ${problems.length} problem(s)`);
process.exit(problems.length ? 1 : 0);

// blocks returns the fenced code blocks of text: {lang, body, line}.
function blocks(text) {
  const out = [];
  const lines = text.split('\n');
  let open = null;
  lines.forEach((l, i) => {
    const m = l.match(/^\s*(```+|~~~+)\s*([\w-]*)/);
    if (!m) {
      if (open) open.body.push(l);
      return;
    }
    if (!open) open = { fence: m[1], lang: m[2], body: [], line: i + 2 };
    else if (l.trim().startsWith(open.fence) && l.trim().replace(/[`~]/g, '') === '') {
      out.push({ lang: open.lang, body: open.body.join('\n'), line: open.line });
      open = null;
    } else open.body.push(l);
  });
  return out;
}

async function checkMermaid(file, text) {
  for (const b of blocks(text).filter((b) => b.lang === 'mermaid')) {
    let diagram;
    try {
      await mermaid.parse(b.body);
      diagram = await mermaid.mermaidAPI.getDiagramFromText(b.body);
    } catch (e) {
      report(file, b.line, `mermaid: ${String(e.message).split('\n').slice(0, 3).join(' ')}`);
      continue;
    }
    for (const label of labels(diagram.db)) {
      const shown = rendered(label);
      if (shown !== visible(label)) {
        report(file, b.line, `mermaid: label ${JSON.stringify(label)} renders as ${JSON.stringify(shown)} (escape < and > as #lt; and #gt;)`);
      }
    }
  }
}

// labels returns the texts a sequence diagram or a flowchart shows.
function labels(db) {
  const out = [];
  if (db.getMessages) for (const m of db.getMessages()) if (m.message) out.push(m.message);
  if (db.getActors) for (const a of db.getActors().values()) if (a.description) out.push(a.description);
  if (db.getVertices) for (const v of db.getVertices().values()) if (v.text) out.push(v.text);
  if (db.getEdges) for (const e of db.getEdges()) if (e.text) out.push(e.text);
  return out.map(String);
}

// visible is what a label should show: Mermaid's #entity; escapes and <br>
// line breaks taken into account.
function visible(label) {
  return decode(label.replace(/<br\s*\/?>/gi, '\n'));
}

// rendered is what the label shows after Mermaid's sanitizer.
function rendered(label) {
  const div = document.createElement('div');
  div.innerHTML = purify.sanitize(label.replace(/<br\s*\/?>/gi, '\n'));
  return decode(div.textContent);
}

function decode(s) {
  return s.replace(/#(\w+);/g, (m, name) => ({ lt: '<', gt: '>', quot: '"', amp: '&', semi: ';' }[name] ?? m));
}

function checkLinks(file, text) {
  const inCode = new Set();
  const lines = text.split('\n');
  let fence = null;
  lines.forEach((l, i) => {
    const m = l.match(/^\s*(```+|~~~+)/);
    if (m) fence = fence ? null : m[1];
    else if (fence) inCode.add(i);
  });
  lines.forEach((l, i) => {
    if (inCode.has(i)) return;
    const plain = l.replace(/`[^`]*`/g, '');
    for (const m of plain.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, mailto:, ...
      const [p, anchor] = target.split('#');
      const dest = p ? path.normalize(path.join(path.dirname(file), decodeURIComponent(p))) : file;
      if (p && !existsSync(path.join(root, dest))) {
        report(file, i + 1, `link to ${target}: ${dest} does not exist`);
        continue;
      }
      if (anchor !== undefined && dest.endsWith('.md') && !anchors(dest).has(anchor)) {
        report(file, i + 1, `link to ${target}: no heading or id "${anchor}" in ${dest}`);
      }
    }
  });
}

// prose returns text's lines outside fenced code, with their indexes.
function prose(text) {
  const out = [];
  let fence = null;
  text.split('\n').forEach((l, i) => {
    const m = l.match(/^\s*(```+|~~~+)/);
    if (m) fence = fence ? null : m[1];
    else if (!fence) out.push([l, i]);
  });
  return out;
}

// resolve returns the repository path of a page named in file's text:
// relative to file's folder, else to the repository root.
function resolve(file, name) {
  const rel = path.normalize(path.join(path.dirname(file), name));
  return existsSync(path.join(root, rel)) ? rel : path.normalize(name);
}

// checkSectionRefs reports prose references to a section that its page
// does not have: `PAGE.md, "Heading"`, with PAGE.md linked or not.
function checkSectionRefs(file, text) {
  for (const [l, i] of prose(text)) {
    const plain = l.replace(/`[^`]*`/g, '').replace(/\]\(([^)#\s]+\.md)(?:#[^)]*)?\)/g, ' $1');
    for (const m of plain.matchAll(/([\w./-]+\.md)\)?,\s*"([^"]+)"/g)) {
      const dest = resolve(file, m[1]);
      if (!existsSync(path.join(root, dest))) continue; // checkLinks reports links; prose names may be loose
      if (!anchors(dest).has(slug(m[2]))) report(file, i + 1, `refers to ${m[1]}, "${m[2]}": no such heading in ${dest}`);
    }
  }
}

// checkQuotes reports numbers marked as quoted from a results table that
// the table no longer says: the marker <!-- quote: PAGE "row" --> must
// follow, within 40 characters on its line, the bold value of the row of
// PAGE's tables whose first cell is row.
function checkQuotes(file, text) {
  for (const [l, i] of prose(text)) {
    for (const m of l.matchAll(/<!--\s*quote:\s*(\S+)\s+"([^"]+)"\s*-->/g)) {
      const dest = resolve(file, m[1]);
      if (!existsSync(path.join(root, dest))) {
        report(file, i + 1, `quotes ${m[1]}, which does not exist`);
        continue;
      }
      const want = quoted(dest, m[2]);
      if (want === undefined) {
        report(file, i + 1, `quotes ${m[1]} "${m[2]}": no table row with a bold value of that name there`);
        continue;
      }
      const before = l.slice(Math.max(0, m.index - 40), m.index);
      if (!before.includes(want)) report(file, i + 1, `quotes ${m[1]} "${m[2]}" as "${before.trim().split(/\s+/).pop()}", but it says ${want}`);
    }
  }
}

// quoted returns the first token of the first bold cell of the table row
// of file whose first cell (markup removed) is row, or undefined.
function quoted(file, row) {
  const text = readFileSync(path.join(root, file), 'utf8');
  for (const [l] of prose(text)) {
    if (!l.trim().startsWith('|')) continue;
    const cells = l.trim().replace(/^\||\|$/g, '').split('|').map((c) => c.trim());
    if (cells[0].replace(/[`*]/g, '').toLowerCase() !== row.toLowerCase()) continue;
    const bold = cells.slice(1).map((c) => c.match(/\*\*([^*]+)\*\*/)).find(Boolean);
    if (bold) return bold[1].trim().split(/\s+/)[0];
  }
  return undefined;
}

// anchors returns the anchors GitHub makes for file's headings, plus
// explicit id/name attributes.
function anchors(file) {
  if (headingCache.has(file)) return headingCache.get(file);
  const set = new Set();
  const seen = new Map();
  const text = readFileSync(path.join(root, file), 'utf8');
  const lines = text.split('\n');
  let fence = null;
  for (const l of lines) {
    const f = l.match(/^\s*(```+|~~~+)/);
    if (f) { fence = fence ? null : f[1]; continue; }
    if (fence) continue;
    const h = l.match(/^#{1,6}\s+(.*?)\s*#*\s*$/);
    if (h) {
      const base = slug(h[1]);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      set.add(n ? `${base}-${n}` : base);
    }
    for (const m of l.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) set.add(m[1]);
  }
  headingCache.set(file, set);
  return set;
}

// slug is GitHub's heading anchor: markup removed, lower case, punctuation
// dropped, spaces to hyphens.
function slug(heading) {
  return heading
    .replace(/!\[[^\]]*\]\([^)]*\)/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}
