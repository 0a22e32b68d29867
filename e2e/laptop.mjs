// The first window fits a laptop (issue 31 item 3): at the default 1280×800 the canvas has most
// of the width (the source view and the inspector open when wanted, and stay as the user left
// them), the debugger toolbar is one row, no edge label covers another label or a node, and the
// minimap covers no node and no label.
import fs from 'node:fs';
import path from 'node:path';
import { T, eventually, launch, nodeSel, press, screenshot, testid } from './lib.mjs';

/** Clicks the theme toggle until the theme is `want` (it cycles system → dark → light). */
export async function setTheme(b, want) {
  for (let i = 0; i < 4; i++) {
    const t = await (await b.$(testid('theme-toggle'))).getAttribute('title');
    if (t.startsWith(`Theme: ${want} `)) return;
    await (await b.$(testid('theme-toggle'))).click();
  }
  throw new Error(`could not set the theme to ${want}`);
}

/** Waits until the nodes on the canvas stop moving (a fit is animated), under T.ui. */
export async function settle(b) {
  const read = () => b.execute(() => JSON.stringify([...document.querySelectorAll('[data-testid="node"]')].map((e) => {
    const r = e.getBoundingClientRect();
    return [Math.round(r.left), Math.round(r.top), Math.round(r.width)];
  })));
  let last = await read();
  await b.waitUntil(async () => {
    const now = await read();
    const still = now === last && now !== '[]';
    last = now;
    return still;
  }, { timeout: T.ui, interval: 300, timeoutMsg: 'the canvas settled (nodes no longer moving)' });
}

/**
 * The window's layout, measured in the DOM: window and canvas widths, the debugger toolbar's
 * height and rows (its visible items grouped by vertical centre), and every overlap of an edge
 * label with another label or a node, and of the minimap with a node.
 */
export async function layoutReport(b) {
  return b.execute(() => {
    const box = (e) => {
      const r = e.getBoundingClientRect();
      return { x: r.left, y: r.top, w: r.width, h: r.height };
    };
    const overlap = (a, c) => a.x + 0.5 < c.x + c.w && c.x + 0.5 < a.x + a.w && a.y + 0.5 < c.y + c.h && c.y + 0.5 < a.y + a.h;
    const all = (sel) => [...document.querySelectorAll(sel)];
    const canvas = document.querySelector('[data-testid="canvas"]');
    const toolbar = document.querySelector('[data-testid="dbg-toolbar"]');
    const items = toolbar
      ? [...toolbar.children].filter((e) => getComputedStyle(e).display !== 'none' && e.getBoundingClientRect().width > 0).map(box)
      : [];
    const centres = [];
    for (const it of items) {
      const c = it.y + it.h / 2;
      if (!centres.some((x) => Math.abs(x - c) < 6)) centres.push(c);
    }
    const nodes = all('[data-testid="node"]').map((e) => ({ id: e.getAttribute('data-node-id'), ...box(e) }));
    const labels = all('[data-testid="edge-label"]').map((e) => ({ id: e.getAttribute('data-edge-id'), text: e.textContent, title: e.getAttribute('title'), ...box(e) }));
    const mini = document.querySelector('.react-flow__minimap');
    const minimap = mini ? box(mini) : null;
    const problems = [];
    labels.forEach((a, i) => {
      for (const n of nodes) if (overlap(a, n)) problems.push(`label "${a.text}" (${a.id}) on node ${n.id}`);
      for (const c of labels.slice(i + 1)) if (overlap(a, c)) problems.push(`labels "${a.text}" (${a.id}) and "${c.text}" (${c.id}) overlap`);
    });
    if (minimap) for (const n of nodes) if (overlap(minimap, n)) problems.push(`the minimap covers node ${n.id}`);
    if (minimap) for (const l of labels) if (overlap(minimap, l)) problems.push(`the minimap covers label "${l.text}" (${l.id})`);
    return {
      windowWidth: window.innerWidth,
      windowHeight: window.innerHeight,
      canvasWidth: canvas ? Math.round(canvas.getBoundingClientRect().width) : 0,
      canvasHeight: canvas ? Math.round(canvas.getBoundingClientRect().height) : 0,
      toolbarHeight: toolbar ? Math.round(toolbar.getBoundingClientRect().height) : 0,
      toolbarRows: centres.length,
      nodes: nodes.length,
      labels: labels.length,
      labelTexts: labels.map((l) => [l.text, l.title]),
      minimap,
      problems,
    };
  });
}

/** Whether the webview's localStorage on disk (under $XDG_DATA_HOME) holds `text` yet. */
function stored(dataDir, text) {
  const needles = [Buffer.from(text, 'utf8'), Buffer.from(text, 'utf16le')];
  const walk = (d) => {
    let out = [];
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) out = out.concat(walk(p));
      else if (d.endsWith('localstorage')) out.push(p);
    }
    return out;
  };
  return walk(dataDir).some((f) => {
    const buf = fs.readFileSync(f);
    return needles.some((n) => buf.includes(n));
  });
}

/** The window at `w`×`h` (the page's own size), the document drawn and the fit settled. */
async function sized(b, w, h) {
  await b.setWindowSize(w, h);
  await b.waitUntil(async () => {
    const s = await b.execute(() => [window.innerWidth, window.innerHeight]);
    return s[0] === w && s[1] === h;
  }, { timeout: T.ui, timeoutMsg: `the window ${w}×${h}` });
  await b.waitUntil(async () => (await b.$$('[data-testid="node"]')).length > 2, { timeout: T.ui, timeoutMsg: 'the document drawn' });
  await settle(b);
}

const shown = async (b, id) => (await b.$(testid(id))).isExisting();

export function registerLaptopTests(test, { assert, assertEq }) {
  /** The checks of the issue at the window's size now; `when` names the moment. */
  const fits = async (b, when) => {
    const r = await layoutReport(b);
    assert(r.canvasWidth >= 0.7 * r.windowWidth, `${when}: the canvas is ${r.canvasWidth} px of ${r.windowWidth} (at least 70%)`);
    assertEq(r.toolbarRows, 1, `${when}: the debugger toolbar is one row (${r.toolbarHeight} px high)`);
    assert(r.toolbarHeight <= 44, `${when}: the debugger toolbar is one row high (${r.toolbarHeight} px)`);
    assert(r.labels > 0, `${when}: edge labels are drawn`);
    assertEq(r.problems, [], `${when}: no edge label on another label or on a node, and the minimap on no node`);
    return r;
  };

  test('laptop: at 1280×800 the canvas comes first, the toolbar is one row, labels and the minimap cover nothing; the panes chosen are remembered', async ({ b, file, dataDir, relaunch }) => {
    await sized(b, 1280, 800);
    // A new user: palette and canvas; the source view opens with its toggle, the inspector
    // with a selection (or its toggle), the debugger panel with a run.
    assert(!(await shown(b, 'source-view')), 'the source view is collapsed by default');
    assert(!(await shown(b, 'inspector')), 'the inspector is collapsed by default');
    assert(!(await shown(b, 'debug-dock')), 'the debugger panel is collapsed while nothing runs');
    const first = await fits(b, 'first window');
    await screenshot(b, 'laptop-1280-first-window');
    console.log(`     canvas ${first.canvasWidth}/${first.windowWidth} px, ${first.labels} labels, minimap ${first.minimap ? 'shown' : 'hidden'}`);

    // Every action names itself and its key.
    const titles = await b.execute(() => Object.fromEntries(
      [...document.querySelectorAll('[data-testid="dbg-toolbar"] button, .pane-toggles button')].map((e) => [e.getAttribute('data-testid'), e.getAttribute('title') || '']),
    ));
    for (const [id, key] of [['dbg-continue', 'F5'], ['dbg-step', 'F10'], ['dbg-step-into', 'F11'], ['dbg-step-out', 'Shift+F11'], ['dbg-stop', 'Shift+F5'], ['dbg-restart', 'Ctrl+Shift+F5'],
      ['pane-toggle-palette', 'Ctrl+B'], ['pane-toggle-source', 'Ctrl+U'], ['pane-toggle-inspector', 'Ctrl+I'], ['toggle-debug-panel', 'Ctrl+J']]) {
      assert((titles[id] || '').includes(`(${key})`), `the tooltip of ${id} names its key ${key}: "${titles[id]}"`);
    }
    for (const [id, t] of Object.entries(titles)) if (id) assert(t.length > 3, `${id} has a tooltip`);
    // A shortened label keeps its whole text in its tooltip.
    for (const [text, title] of first.labelTexts) {
      assert(title && (title === text || (text.endsWith('…') && title.startsWith(text.slice(0, -1)))), `label "${text}" has its whole text in the tooltip: "${title}"`);
    }

    // Selecting a node shows the inspector beside the canvas (the node stays in view); clicking
    // Escape (nothing selected) hides it again.
    await (await b.$(nodeSel('confirm'))).click();
    await (await b.$(testid('inspector-name'))).waitForDisplayed({ timeout: T.ui });
    await b.waitUntil(async () => b.execute((sel) => {
      const n = document.querySelector(sel).getBoundingClientRect();
      const c = document.querySelector('[data-testid="canvas"]').getBoundingClientRect();
      return n.left >= c.left && n.right <= c.right;
    }, nodeSel('confirm')), { timeout: T.ui, timeoutMsg: 'the selected node in view beside the inspector' });
    await press(b, 'Escape');
    await b.waitUntil(async () => !(await shown(b, 'inspector')), { timeout: T.ui, timeoutMsg: 'the inspector hidden again with nothing selected' });

    // The user opens the inspector and the source view: both stay, and the toolbar is still one row.
    await (await b.$(testid('pane-toggle-inspector'))).click();
    await (await b.$(testid('inspector'))).waitForDisplayed({ timeout: T.ui });
    await (await b.$(testid('pane-toggle-source'))).click();
    await (await b.$(testid('source-view'))).waitForDisplayed({ timeout: T.ui });
    await settle(b);
    const open = await layoutReport(b);
    assertEq(open.toolbarRows, 1, `with the source view and the inspector open the toolbar is one row (${open.toolbarHeight} px)`);
    assertEq(open.problems, [], 'with the source view and the inspector open: no label on another or on a node, the minimap on neither');
    // The graph showed whole before: it is fitted to the narrower canvas, every node in it.
    const clipped = await b.execute(() => {
      const c = document.querySelector('[data-testid="canvas"]').getBoundingClientRect();
      return [...document.querySelectorAll('[data-testid="node"]')].filter((e) => {
        const r = e.getBoundingClientRect();
        return r.left < c.left - 1 || r.right > c.right + 1 || r.top < c.top - 1 || r.bottom > c.bottom + 1;
      }).map((e) => e.getAttribute('data-node-id'));
    });
    assertEq(clipped, [], 'every node inside the narrower canvas');
    await screenshot(b, 'laptop-1280-panes-open');
    await eventually(() => stored(dataDir, '"inspector":"open"') && stored(dataDir, '"source":true'), (ok) => ok, 'the panes chosen written to the webview storage');

    // Relaunched: the window opens as the user left it.
    const b2 = await relaunch([file]);
    await sized(b2, 1280, 800);
    await (await b2.$(testid('inspector'))).waitForDisplayed({ timeout: T.ui });
    await (await b2.$(testid('source-view'))).waitForDisplayed({ timeout: T.ui });
    assert(await b2.execute(() => document.querySelector('[data-testid="pane-toggle-inspector"]').classList.contains('on')), 'the inspector toggle shows it open');
    // Closed again, and that is remembered too.
    await (await b2.$(testid('pane-toggle-inspector'))).click();
    await (await b2.$(testid('pane-toggle-source'))).click();
    await b2.waitUntil(async () => !(await shown(b2, 'inspector')) && !(await shown(b2, 'source-view')), { timeout: T.ui, timeoutMsg: 'both panes closed' });
    await eventually(() => stored(dataDir, '"inspector":"closed"') && stored(dataDir, '"source":false'), (ok) => ok, 'the closed panes written to the webview storage');
    await b2.deleteSession();
    const b3 = await launch([file]);
    try {
      await sized(b3, 1280, 800);
      await (await b3.$(nodeSel('confirm'))).click();
      // Closed for good: not even a selection brings it back.
      await b3.waitUntil(async () => b3.execute((sel) => document.querySelector(sel)?.closest('.react-flow__node')?.classList.contains('selected') ?? false, nodeSel('confirm')), {
        timeout: T.ui, timeoutMsg: 'confirm selected',
      });
      assert(!(await shown(b3, 'inspector')) && !(await shown(b3, 'source-view')), 'after a relaunch both stay closed, even with a node selected');
      await fits(b3, 'relaunched with both closed');
    } finally {
      await b3.deleteSession().catch(() => {});
    }
  });

  test('laptop: the Loki example at 1280×800, light and dark: one-row toolbar, no label or minimap over anything', async ({ b }) => {
    await sized(b, 1280, 800);
    for (const theme of ['light', 'dark']) {
      await setTheme(b, theme);
      await fits(b, `release-gate, ${theme}`);
      await screenshot(b, `laptop-1280-release-gate-${theme}`);
    }
  }, { loki: true });
}
