// The first window fits a laptop (issue 31 item 3): the panes around the canvas open when wanted
// and are remembered across launches (ui/src/panes.ts), in the store and in the window.
import { describe, expect, it } from 'vitest';
import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { App } from '../App';
import { createFakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { demoView } from '../fake/demo';
import {
  DEFAULT_PANES,
  PANES_KEY,
  canvasWidth,
  inspectorShown,
  inspectorToggleTitle,
  loadPanes,
  paneForKey,
  parsePanes,
  savePanes,
  toggledInspector,
  type Panes,
} from '../panes';
import { panToShow } from '../components/Canvas';

/** A storage like localStorage, in memory. */
function memoryStorage(init: Record<string, string> = {}) {
  const m = new Map(Object.entries(init));
  return {
    getItem: (k: string) => m.get(k) ?? null,
    setItem: (k: string, v: string) => void m.set(k, v),
    map: m,
  };
}

describe('panes: defaults and what is remembered', () => {
  it('a new user gets the canvas first: palette on, source view off, inspector on selection, debugger off', () => {
    expect(loadPanes(memoryStorage())).toEqual({
      palette: true,
      source: false,
      inspector: 'auto',
      debugger: false,
      minimap: true,
      sideWidth: null,
      dockHeight: null,
    });
    // At the default 1280×800 that leaves the canvas 1124 px (88%); with the inspector open
    // beside a selection still 824 px (64%).
    expect(canvasWidth(DEFAULT_PANES, 1280, false)).toBe(1124);
    expect(canvasWidth(DEFAULT_PANES, 1280, true)).toBe(824);
    // Before this change every pane was open: 1280 − 156 − (333 + 5) − 300 = 486 px (38%).
    expect(canvasWidth({ ...DEFAULT_PANES, source: true, inspector: 'open' }, 1280, false)).toBe(486);
    expect(canvasWidth(DEFAULT_PANES, 1280, false) / 1280).toBeGreaterThanOrEqual(0.7);
  });

  it('saves and loads back every field', () => {
    const s = memoryStorage();
    const p: Panes = { palette: false, source: true, inspector: 'closed', debugger: true, minimap: false, sideWidth: 512, dockHeight: 300 };
    savePanes(p, s);
    expect(JSON.parse(s.map.get(PANES_KEY)!)).toEqual(p);
    expect(loadPanes(s)).toEqual(p);
  });

  it('ignores what it does not understand, field by field', () => {
    expect(parsePanes(null)).toEqual(DEFAULT_PANES);
    expect(parsePanes('not json')).toEqual(DEFAULT_PANES);
    expect(parsePanes('[1, 2]')).toEqual(DEFAULT_PANES);
    expect(parsePanes(JSON.stringify({ source: 'yes', inspector: 'sometimes', palette: false, sideWidth: -4, dockHeight: 1e9 }))).toEqual({ ...DEFAULT_PANES, palette: false });
    expect(parsePanes(JSON.stringify({ sideWidth: 400.4, dockHeight: 250 }))).toMatchObject({ sideWidth: 400, dockHeight: 250 });
  });

  it('a storage that throws leaves the defaults and loses nothing else', () => {
    const broken = {
      getItem: () => {
        throw new Error('denied');
      },
      setItem: () => {
        throw new Error('full');
      },
    };
    expect(loadPanes(broken)).toEqual(DEFAULT_PANES);
    expect(() => savePanes({ ...DEFAULT_PANES, source: true }, broken)).not.toThrow();
  });

  it('the inspector: shown on selection in auto, always when open, never when closed; its toggle flips what shows', () => {
    expect([inspectorShown('auto', false), inspectorShown('auto', true)]).toEqual([false, true]);
    expect([inspectorShown('open', false), inspectorShown('open', true)]).toEqual([true, true]);
    expect([inspectorShown('closed', false), inspectorShown('closed', true)]).toEqual([false, false]);
    // Shown → hidden for good; hidden → pinned open.
    expect(toggledInspector('auto', true)).toBe('closed');
    expect(toggledInspector('auto', false)).toBe('open');
    expect(toggledInspector('open', false)).toBe('closed');
    expect(toggledInspector('closed', true)).toBe('open');
    expect(inspectorToggleTitle('auto', false)).toBe('Show the inspector (Ctrl+I); it also opens when you select a node or edge');
    expect(inspectorToggleTitle('open', false)).toBe('Hide the inspector (Ctrl+I)');
    expect(inspectorToggleTitle('closed', true)).toContain('hidden even when a node is selected');
  });

  it('Ctrl+B, U, I, J toggle the palette, source view, inspector and debugger; nothing else does', () => {
    const k = (key: string, m: Partial<KeyboardEvent> = {}) => paneForKey({ key, ctrlKey: true, metaKey: false, shiftKey: false, altKey: false, ...m });
    expect([k('b'), k('u'), k('I'), k('j')]).toEqual(['palette', 'source', 'inspector', 'debugger']);
    expect(k('u', { metaKey: true, ctrlKey: false })).toBe('source');
    expect(k('u', { ctrlKey: false })).toBeNull();
    expect(k('u', { shiftKey: true })).toBeNull();
    expect(k('u', { altKey: true })).toBeNull();
    expect(k('s')).toBeNull();
  });

  it('the selected node is panned into view only when it is not: its left edge first', () => {
    expect(panToShow(100, 320, 800)).toBe(0);
    expect(panToShow(700, 920, 800)).toBe(800 - 24 - 920);
    expect(panToShow(-50, 170, 800)).toBe(74);
    // Wider than the pane: its left edge shows.
    expect(panToShow(500, 1500, 800)).toBe(24 - 500);
  });
});

async function open(storeInit?: Record<string, unknown>) {
  if (storeInit) localStorage.setItem(PANES_KEY, JSON.stringify(storeInit));
  const store = createAppStore(createFakeBackend(demoView()));
  render(<App store={store} />);
  await waitFor(() => expect(store.getState().ready).toBe(true));
  await screen.findAllByTestId('node');
  return store;
}

const remembered = () => JSON.parse(localStorage.getItem(PANES_KEY) ?? 'null') as Panes | null;

describe('panes in the window', () => {
  it('opens canvas-first; a selection shows the inspector until it is cleared', async () => {
    const store = await open();
    expect(screen.getByTestId('palette')).toBeTruthy();
    expect(screen.queryByTestId('source-view')).toBeNull();
    expect(screen.queryByTestId('inspector')).toBeNull();
    expect(screen.queryByTestId('debug-dock')).toBeNull();
    fireEvent.click(screen.getAllByTestId('node').find((n) => n.getAttribute('data-node-id') === 'count')!);
    expect(((await screen.findByTestId('inspector-name')) as HTMLInputElement).value).toBe('count');
    expect(screen.getByTestId('pane-toggle-inspector').className).toContain('on');
    act(() => store.getState().select(null));
    expect(screen.queryByTestId('inspector')).toBeNull();
    // Showing it on a selection is not a choice: nothing was written.
    expect(remembered()).toBeNull();
  });

  it('the toggles open and close each pane and the choice is written', async () => {
    await open();
    fireEvent.click(screen.getByTestId('pane-toggle-source'));
    expect(screen.getByTestId('source-view')).toBeTruthy();
    fireEvent.click(screen.getByTestId('pane-toggle-inspector'));
    expect(screen.getByTestId('inspector')).toBeTruthy();
    fireEvent.click(screen.getByTestId('toggle-debug-panel'));
    expect(screen.getByTestId('debug-dock')).toBeTruthy();
    fireEvent.click(screen.getByTestId('pane-toggle-palette'));
    expect(screen.queryByTestId('palette')).toBeNull();
    expect(remembered()).toMatchObject({ palette: false, source: true, inspector: 'open', debugger: true });
    expect(screen.getByTestId('pane-toggle-source').getAttribute('aria-pressed')).toBe('true');
    fireEvent.click(screen.getByTestId('pane-toggle-source'));
    expect(screen.queryByTestId('source-view')).toBeNull();
    expect(remembered()).toMatchObject({ source: false });
  });

  it('the next launch opens as the user left it', async () => {
    await open({ source: true, inspector: 'open', palette: false });
    expect(screen.getByTestId('source-view')).toBeTruthy();
    expect(screen.getByTestId('inspector')).toBeTruthy();
    expect(screen.queryByTestId('palette')).toBeNull();
  });

  it('closed for good: a selection does not bring the inspector back', async () => {
    const store = await open({ inspector: 'closed' });
    act(() => store.getState().select({ type: 'node', id: 'count' }));
    expect(screen.queryByTestId('inspector')).toBeNull();
    expect(screen.getByTestId('pane-toggle-inspector').getAttribute('title')).toContain('hidden even when a node is selected');
  });

  it('the keys toggle the panes (not while typing a key the editor took)', async () => {
    await open();
    fireEvent.keyDown(window, { key: 'u', ctrlKey: true });
    expect(screen.getByTestId('source-view')).toBeTruthy();
    fireEvent.keyDown(window, { key: 'i', ctrlKey: true });
    expect(screen.getByTestId('inspector')).toBeTruthy();
    fireEvent.keyDown(window, { key: 'j', ctrlKey: true });
    expect(screen.getByTestId('debug-dock')).toBeTruthy();
    fireEvent.keyDown(window, { key: 'b', ctrlKey: true });
    expect(screen.queryByTestId('palette')).toBeNull();
    expect(remembered()).toMatchObject({ palette: false, source: true, inspector: 'open', debugger: true });
    const e = new KeyboardEvent('keydown', { key: 'u', ctrlKey: true, cancelable: true, bubbles: true });
    e.preventDefault();
    act(() => void window.dispatchEvent(e));
    expect(screen.getByTestId('source-view')).toBeTruthy();
  });

  it('the Source toggle counts the problems while the list is hidden', async () => {
    await open();
    const badge = screen.getByTestId('pane-toggle-source-count');
    expect(badge.textContent).toBe('1');
    expect(badge.className).toContain('sev-error');
    expect(screen.getByTestId('pane-toggle-source').getAttribute('title')).toBe('Show the YAML source and its problems (Ctrl+U) · 1 error, 1 warning');
  });

  it('the minimap button is remembered too', async () => {
    await open();
    fireEvent.click(screen.getByTestId('minimap-toggle'));
    expect(remembered()).toMatchObject({ minimap: false });
  });
});
