import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { App } from '../App';
import { createFakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { shortcutFor } from '../shortcuts';
import { demoView } from '../fake/demo';

const ev = (key: string, mods: Partial<{ ctrlKey: boolean; shiftKey: boolean; metaKey: boolean; altKey: boolean }> = {}, target: EventTarget | null = document.body) => ({
  key,
  ctrlKey: false,
  shiftKey: false,
  metaKey: false,
  altKey: false,
  target,
  ...mods,
});

describe('shortcuts', () => {
  it('maps keys to actions', () => {
    expect(shortcutFor(ev('z', { ctrlKey: true }))).toBe('undo');
    expect(shortcutFor(ev('Z', { ctrlKey: true, shiftKey: true }))).toBe('redo');
    expect(shortcutFor(ev('y', { ctrlKey: true }))).toBe('redo');
    expect(shortcutFor(ev('s', { metaKey: true }))).toBe('save');
    expect(shortcutFor(ev('o', { ctrlKey: true }))).toBe('open');
    expect(shortcutFor(ev('f', { ctrlKey: true }))).toBe('search');
    expect(shortcutFor(ev('Delete'))).toBe('delete');
    expect(shortcutFor(ev('Escape'))).toBe('deselect');
    expect(shortcutFor(ev('z'))).toBeNull();
    const input = document.createElement('input');
    expect(shortcutFor(ev('Delete', {}, input))).toBeNull();
    expect(shortcutFor(ev('Backspace', {}, input))).toBeNull();
  });

  it('dispatch undo, redo, save, open, delete and focus search in the app', async () => {
    const backend = createFakeBackend(demoView());
    const store = createAppStore(backend);
    render(<App store={store} />);
    await waitFor(() => expect(store.getState().ready).toBe(true));
    const cmds = () => backend.calls.map((c) => c.cmd);

    fireEvent.keyDown(window, { key: 'z', ctrlKey: true });
    await waitFor(() => expect(cmds()).toContain('undo'));
    fireEvent.keyDown(window, { key: 'Z', ctrlKey: true, shiftKey: true });
    await waitFor(() => expect(cmds()).toContain('redo'));
    fireEvent.keyDown(window, { key: 'y', ctrlKey: true });
    await waitFor(() => expect(cmds().filter((c) => c === 'redo')).toHaveLength(2));
    fireEvent.keyDown(window, { key: 's', ctrlKey: true });
    await waitFor(() => expect(backend.calls).toContainEqual({ cmd: 'save', args: { force: false } }));
    fireEvent.keyDown(window, { key: 'o', ctrlKey: true });
    await waitFor(() => expect(cmds()).toContain('open_dialog'));

    fireEvent.keyDown(window, { key: 'f', ctrlKey: true });
    await waitFor(() => expect(document.activeElement).toBe(screen.getByTestId('search')));
    fireEvent.change(screen.getByTestId('search'), { target: { value: 'count' } });
    fireEvent.keyDown(screen.getByTestId('search'), { key: 'Enter' });
    expect(store.getState().selection).toEqual({ type: 'node', id: 'count' });
    (document.activeElement as HTMLElement).blur();

    fireEvent.keyDown(window, { key: 'Delete' });
    await waitFor(() => expect(backend.calls.at(-1)).toEqual({ cmd: 'apply_edit', args: { op: { op: 'delete_node', name: 'count' } } }));
  });
});
