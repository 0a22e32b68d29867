// The debugger toolbar names every action and its key (issue 31 item 3), and what does not fit on
// a narrow toolbar is in its More ▾ menu (debug.css's container queries choose what shows; the
// window test e2e/laptop.mjs measures the toolbar's one row at 1280×800).
import { describe, expect, it } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { DEBUG_KEYS, debugShortcutFor } from '../shortcuts';
import { renderApp } from './harness';

/** "Ctrl+Shift+F5" as the key event it names. */
function keyEvent(k: string) {
  const parts = k.split('+');
  return { key: parts.at(-1)!, ctrlKey: parts.includes('Ctrl'), shiftKey: parts.includes('Shift'), altKey: false, metaKey: false };
}

describe('debugger toolbar', () => {
  it('the keys the tooltips name are the keys that do it', () => {
    for (const [action, key] of Object.entries(DEBUG_KEYS)) expect([key, debugShortcutFor(keyEvent(key))]).toEqual([key, action]);
  });

  it('every button has a tooltip; each one with a key names it and declares it', async () => {
    await renderApp();
    const bar = screen.getByTestId('dbg-toolbar');
    const byId: Record<string, string> = {
      'dbg-continue': DEBUG_KEYS.continue,
      'dbg-step': DEBUG_KEYS.step,
      'dbg-step-into': DEBUG_KEYS['step-into'],
      'dbg-step-out': DEBUG_KEYS['step-out'],
      'dbg-stop': DEBUG_KEYS.stop,
      'dbg-restart': DEBUG_KEYS.restart,
    };
    for (const [id, key] of Object.entries(byId)) {
      const b = within(bar).getByTestId(id);
      expect(b.getAttribute('title')).toContain(`(${key})`);
      expect(b.getAttribute('aria-keyshortcuts')).toBe(key);
    }
    expect(within(bar).getByTestId('dbg-continue').getAttribute('title')).toBe('Run (F5): start a run of the open document');
    expect(within(bar).getByTestId('dbg-step').getAttribute('title')).toBe('Step (F10): run one step and pause');
    for (const b of within(bar).getAllByRole('button')) {
      // A name a user can read: its label or its tooltip.
      expect((b.getAttribute('title') ?? '').length, b.outerHTML).toBeGreaterThan(4);
    }
  });

  it('More ▾ holds Runs…, Connect to server…, Open trace… and Break on error', async () => {
    const { dbg } = await renderApp();
    expect(screen.queryByTestId('dbg-more-menu')).toBeNull();
    fireEvent.click(screen.getByTestId('dbg-more'));
    const menu = screen.getByTestId('dbg-more-menu');
    expect(within(menu).getAllByRole('menuitem').map((m) => m.textContent)).toEqual(['Runs…', 'Connect to server…', 'Open trace…']);
    fireEvent.click(within(menu).getByTestId('dbg-more-break-on-error'));
    await waitFor(() => expect(dbg.getState().breakOnError).toBe(true));
    fireEvent.click(within(menu).getByTestId('dbg-more-runs'));
    expect(screen.queryByTestId('dbg-more-menu')).toBeNull();
    await waitFor(() => expect(dbg.getState().runsOpen).toBe(true));
    fireEvent.click(screen.getByTestId('dbg-more'));
    fireEvent.click(screen.getByTestId('dbg-more-connect'));
    await waitFor(() => expect(dbg.getState().connectOpen).toBe(true));
    // Escape and a click elsewhere close it.
    fireEvent.click(screen.getByTestId('dbg-more'));
    fireEvent.keyDown(document, { key: 'Escape' });
    expect(screen.queryByTestId('dbg-more-menu')).toBeNull();
    fireEvent.click(screen.getByTestId('dbg-more'));
    fireEvent.pointerDown(document.body);
    expect(screen.queryByTestId('dbg-more-menu')).toBeNull();
  });
});
