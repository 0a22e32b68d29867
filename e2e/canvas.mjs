// The canvas stays readable on the largest real agent we know, coyote 0.10.3's review-gauntlet
// (issue 28 item 6): its map lanes are drawn around their nodes, no two edge labels overlap and
// no label covers a node, and the minimap covers no node, fitted and zoomed out.
import fs from 'node:fs';
import path from 'node:path';
import { T, conformanceDir, testid, tmpDir } from './lib.mjs';

const ASSETS = process.env.COYOTE_ASSETS || path.join(conformanceDir(), 'loki', 'coyote-0.10.3', 'assets');

/** The boxes on screen: nodes, edge labels, lanes (with the nodes they hold), the minimap. */
async function boxes(b) {
  return b.execute(() => {
    const r = (e) => {
      const x = e.getBoundingClientRect();
      return { x: x.left, y: x.top, w: x.width, h: x.height };
    };
    const all = (sel) => [...document.querySelectorAll(sel)];
    return {
      nodes: all('[data-testid="node"]').map((e) => ({ id: e.getAttribute('data-node-id'), ...r(e) })),
      labels: all('[data-testid="edge-label"]').map((e) => ({ id: e.getAttribute('data-edge-id'), text: e.textContent, ...r(e) })),
      lanes: all('[data-testid="lane"], [data-testid="lane-shared"]').map((e) => ({
        lane: e.getAttribute('data-lane'),
        shared: e.getAttribute('data-testid') === 'lane-shared',
        nodes: (e.getAttribute('data-lane-nodes') || '').split(' ').filter(Boolean),
        ...r(e),
      })),
      minimap: all('.react-flow__minimap').map(r)[0] ?? null,
    };
  });
}

const overlap = (a, b, tol = 0.5) => a.x + tol < b.x + b.w && b.x + tol < a.x + a.w && a.y + tol < b.y + b.h && b.y + tol < a.y + a.h;
const inside = (a, b, tol = 0.5) => a.x >= b.x - tol && a.y >= b.y - tol && a.x + a.w <= b.x + b.w + tol && a.y + a.h <= b.y + b.h + tol;

export function registerCanvasTests(test, { assert, assertEq }) {
  test('review-gauntlet: lanes drawn around their nodes, no edge label on another or on a node, the minimap on no node', async ({ b }) => {
    await b.waitUntil(async () => (await b.$$('[data-testid="node"]')).length === 18, { timeout: T.ui, timeoutMsg: 'the 18 nodes of review-gauntlet' });
    const check = async (when) => {
      const s = await boxes(b);
      assertEq(s.lanes.filter((l) => !l.shared).map((l) => l.lane), ['map_code_review', 'map_adversary', 'map_security', 'map_probe'], `${when}: one box per lane`);
      assertEq(s.lanes.filter((l) => l.shared).map((l) => l.nodes), [['lane_fault']], `${when}: the shared fault handler in a box of its own`);
      const byId = new Map(s.nodes.map((n) => [n.id, n]));
      for (const l of s.lanes) {
        for (const id of l.nodes) assert(inside(byId.get(id), l), `${when}: ${id} inside the box of ${l.lane}`);
        for (const n of s.nodes) if (!l.nodes.includes(n.id)) assert(!overlap(n, l), `${when}: ${n.id} is not in the box of ${l.lane}`);
      }
      assert(s.labels.length >= 8, `${when}: the edge labels are drawn (${s.labels.length})`);
      for (let i = 0; i < s.labels.length; i++) {
        const a = s.labels[i];
        for (const n of s.nodes) assert(!overlap(a, n), `${when}: label ${a.text} (${a.id}) on node ${n.id}`);
        for (const c of s.labels.slice(i + 1)) assert(!overlap(a, c), `${when}: labels ${a.text} (${a.id}) and ${c.text} (${c.id}) overlap`);
      }
      if (s.minimap) for (const n of s.nodes) assert(!overlap(s.minimap, n), `${when}: the minimap covers ${n.id}`);
      return s;
    };
    // The canvas as wide as the window lets it be: source view, inspector and debugger hidden.
    for (const sel of [testid('pane-toggle-source'), testid('pane-toggle-inspector'), testid('toggle-debug-panel')]) {
      const el = await b.$(sel);
      if ((await el.getAttribute('class')).split(/\s+/).includes('on')) await el.click();
    }
    await b.waitUntil(async () => !(await (await b.$(testid('source-view'))).isExisting()), { timeout: T.ui, timeoutMsg: 'the source view hidden' });
    await (await b.$(testid('fit-view'))).click();
    await b.waitUntil(async () => (await boxes(b)).lanes.length === 5, { timeout: T.ui, timeoutMsg: 'the lanes drawn' });
    // The fit is animated: wait until the view stops moving (a zoom during the animation is
    // undone by its last frame, which made this test fail on a loaded machine).
    const parseBox = async () => JSON.stringify((await boxes(b)).nodes.find((x) => x.id === 'parse') ?? null);
    let last = await parseBox();
    await b.waitUntil(async () => {
      const now = await parseBox();
      const still = now === last && now !== 'null';
      last = now;
      return still;
    }, { timeout: T.ui, interval: 250, timeoutMsg: 'the fitted view settled' });
    const fitted = await check('fitted');
    assert(fitted.minimap, 'fitted: the minimap is shown (the fit leaves its corner free)');
    const m = fitted.nodes.find((x) => x.id === 'parse');
    // Zoom out until the nodes are a fifth smaller (one more click whenever they are not yet).
    await b.waitUntil(async () => {
      const n = (await boxes(b)).nodes.find((x) => x.id === 'parse');
      if (n && m && n.w < m.w * 0.8) return true;
      await (await b.$('.react-flow__controls-zoomout')).click();
      return false;
    }, { timeout: T.ui, interval: 300, timeoutMsg: 'zoomed out' });
    await check('zoomed out');
  }, {
    untrusted: true,
    setup: () => {
      const dir = tmpDir();
      fs.cpSync(ASSETS, path.join(dir, 'assets'), { recursive: true });
      const file = path.join(dir, 'assets', 'agents', 'review-gauntlet', 'graph.yaml');
      return { args: [file], file };
    },
  });
}
