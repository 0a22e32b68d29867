import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { App } from '../App';
import { createFakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { demoView } from '../fake/demo';
import { describeAge } from '../components/RecoveryBanner';
import type { RecoveryOffer } from '../types';

function offer(over: Partial<RecoveryOffer> = {}): RecoveryOffer {
  const v = demoView();
  return {
    path: v.path,
    text: v.text.replace('gpt-4o-mini', 'my-unsaved-model'),
    saved_at_ms: Date.now() - 5 * 60_000,
    disk_changed: false,
    warning: null,
    ...over,
  };
}

async function renderWith(rec: RecoveryOffer | null) {
  const backend = createFakeBackend(demoView());
  backend.recovery = rec;
  const store = createAppStore(backend);
  render(<App store={store} />);
  await waitFor(() => expect(store.getState().ready).toBe(true));
  return { backend, store };
}

describe('recovered unsaved changes', () => {
  it('are offered on open with when they were made; Restore loads them as an undoable dirty edit', async () => {
    const rec = offer();
    const { backend, store } = await renderWith(rec);
    const banner = await screen.findByTestId('recovery-banner');
    expect(banner.textContent).toContain('agent.yaml');
    expect(screen.getByTestId('recovery-time').textContent).toContain('5 minutes ago');
    expect(screen.getByTestId('recovery-time').getAttribute('datetime')).toBe(new Date(rec.saved_at_ms).toISOString());
    expect(screen.queryByTestId('recovery-warning')).toBeNull();
    // Show the changes before deciding.
    fireEvent.click(screen.getByTestId('recovery-diff'));
    const diff = await screen.findByTestId('recovery-diff-view');
    expect(diff.querySelector('.del')?.textContent).toContain('gpt-4o-mini');
    expect(diff.querySelector('.add')?.textContent).toContain('my-unsaved-model');
    fireEvent.click(screen.getByTestId('recovery-restore'));
    await waitFor(() => expect(screen.queryByTestId('recovery-banner')).toBeNull());
    expect(backend.calls.at(-1)).toEqual({ cmd: 'recovery_restore' });
    const v = store.getState().view!;
    expect(v.text).toBe(rec.text);
    expect(v.dirty).toBe(true);
    expect(v.can_undo).toBe(true);
    expect(screen.getByTestId('toast').textContent).toMatch(/Restored/);
  });

  it('Discard removes the offer and keeps the disk text', async () => {
    const { backend, store } = await renderWith(offer());
    fireEvent.click(await screen.findByTestId('recovery-discard'));
    await waitFor(() => expect(screen.queryByTestId('recovery-banner')).toBeNull());
    expect(backend.calls.at(-1)).toEqual({ cmd: 'recovery_discard' });
    expect(backend.recovery).toBeNull();
    expect(store.getState().view!.text).toBe(demoView().text);
    expect(store.getState().view!.dirty).toBe(false);
  });

  it('a recovery made before the file changed on disk is offered with its warning', async () => {
    await renderWith(offer({ disk_changed: true, warning: 'the file changed on disk after these changes were made' }));
    expect((await screen.findByTestId('recovery-warning')).textContent).toContain('changed on disk');
    expect(screen.getByTestId('recovery-banner').className).toContain('warn');
  });

  it('nothing is shown without an offer, or for an offer of another file', async () => {
    const { backend } = await renderWith(null);
    expect(backend.calls.map((c) => c.cmd)).toContain('recovery_offer');
    expect(screen.queryByTestId('recovery-banner')).toBeNull();
    await renderWith(offer({ path: '/elsewhere/other.yaml' }));
    expect(screen.queryAllByTestId('recovery-banner')).toHaveLength(0);
  });

  it('opening another file asks again; a failing check is a toast, not a silent loss', async () => {
    const { backend, store } = await renderWith(null);
    backend.recovery = offer();
    await store.getState().openPath(demoView().path);
    expect(await screen.findByTestId('recovery-banner')).toBeTruthy();
    backend.failNext('recovery_offer', { message: 'permission denied' });
    await store.getState().openPath(demoView().path);
    await waitFor(() => expect(screen.queryByTestId('recovery-banner')).toBeNull());
    expect(store.getState().toasts.at(-1)?.message).toContain('permission denied');
  });

  it('describeAge', () => {
    const now = 1_000_000_000_000;
    expect(describeAge(now - 10_000, now)).toBe('just now');
    expect(describeAge(now - 60_000, now)).toBe('1 minute ago');
    expect(describeAge(now - 3 * 3600_000, now)).toBe('3 hours ago');
    expect(describeAge(now - 3 * 86400_000, now)).toBe('3 days ago');
    expect(describeAge(now + 5000, now)).toBe('just now');
  });
});
