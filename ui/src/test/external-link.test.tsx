// Links out of the app ask first ("Open in your browser?" with the whole URL) and never navigate
// the webview; recordings git would commit are flagged with "Add to .gitignore".
import { afterEach, describe, expect, it, vi } from 'vitest';
import { act, cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { ExternalLink, ExternalLinkDialog, askExternal, externalLinks } from '../components/ExternalLink';
import { Markdown } from '../components/Markdown';
import { cmds, renderApp } from './harness';
import type { RecordCheck } from '../debug/types';

afterEach(() => {
  act(() => externalLinks.getState().close());
  cleanup();
});

const URL_ = 'https://example.com/guide/a-very-long-path/that-goes-on?with=query&and=more#frag';

function mount(open = vi.fn(async () => null)) {
  render(
    <>
      <Markdown text={`Read [the guide](${URL_}) or [write](mailto:ops@example.com) or [bad](javascript:alert(1)).`} />
      <ExternalLinkDialog open={open} />
    </>,
  );
  return open;
}

describe('ExternalLink', () => {
  it('a click shows the whole URL and Cancel opens nothing', () => {
    const open = mount();
    const link = screen.getByText('the guide');
    const click = new MouseEvent('click', { bubbles: true, cancelable: true });
    act(() => {
      link.dispatchEvent(click);
    });
    expect(click.defaultPrevented, 'the webview does not follow the link').toBe(true);
    const dialog = screen.getByTestId('link-dialog');
    expect(dialog.textContent).toContain('Open in your browser?');
    expect(screen.getByTestId('link-url').textContent).toBe(URL_);
    expect(dialog.getAttribute('data-url')).toBe(URL_);
    fireEvent.click(screen.getByTestId('link-cancel'));
    expect(screen.queryByTestId('link-dialog')).toBeNull();
    expect(open).not.toHaveBeenCalled();
  });

  it('Open hands the URL to the shell once and closes', async () => {
    const open = mount();
    fireEvent.click(screen.getByText('the guide'));
    fireEvent.click(screen.getByTestId('link-open'));
    await waitFor(() => expect(screen.queryByTestId('link-dialog')).toBeNull());
    expect(open).toHaveBeenCalledTimes(1);
    expect(open).toHaveBeenCalledWith(URL_);
  });

  it('a refusal of the shell stays in the dialog', async () => {
    mount(vi.fn(async () => Promise.reject({ message: 'could not start xdg-open to open the link' })));
    fireEvent.click(screen.getByText('the guide'));
    fireEvent.click(screen.getByTestId('link-open'));
    expect((await screen.findByTestId('link-error')).textContent).toContain('xdg-open');
    expect(screen.getByTestId('link-dialog')).toBeTruthy();
  });

  it('Ctrl-click and middle click ask too; Escape cancels', () => {
    const open = mount();
    const link = screen.getByText('the guide');
    const ctrl = new MouseEvent('click', { bubbles: true, cancelable: true, ctrlKey: true });
    act(() => {
      link.dispatchEvent(ctrl);
    });
    expect(ctrl.defaultPrevented).toBe(true);
    expect(screen.getByTestId('link-dialog')).toBeTruthy();
    fireEvent.keyDown(window, { key: 'Escape' });
    expect(screen.queryByTestId('link-dialog')).toBeNull();
    const middle = new MouseEvent('auxclick', { bubbles: true, cancelable: true, button: 1 });
    act(() => {
      link.dispatchEvent(middle);
    });
    expect(middle.defaultPrevented).toBe(true);
    expect(screen.getByTestId('link-dialog')).toBeTruthy();
    expect(open).not.toHaveBeenCalled();
  });

  it('mailto asks for the mail program; other schemes are no links at all', () => {
    mount();
    fireEvent.click(screen.getByText('write'));
    expect(screen.getByTestId('link-dialog').textContent).toContain('Open in your mail program?');
    act(() => externalLinks.getState().close());
    const bad = screen.getByText('bad');
    expect(bad.tagName).toBe('SPAN');
    fireEvent.click(bad);
    expect(screen.queryByTestId('link-dialog')).toBeNull();
    // Asked directly, an unsafe URL is ignored as well.
    act(() => askExternal('file:///etc/passwd'));
    expect(screen.queryByTestId('link-dialog')).toBeNull();
  });

  it('an ExternalLink of a URL that is not http, https or mailto is text', () => {
    render(<ExternalLink url="javascript:alert(1)">x</ExternalLink>);
    expect(screen.getByText('x').tagName).toBe('SPAN');
  });

  it('in the app, Open goes to the backend’s open_external', async () => {
    const ctx = await renderApp();
    act(() => askExternal(URL_));
    fireEvent.click(await screen.findByTestId('link-open'));
    await waitFor(() => expect(ctx.backend.opened).toEqual([URL_]));
    expect(cmds(ctx.backend, 'open_external')).toEqual([{ cmd: 'open_external', args: { url: URL_ } }]);
  });
});

const inRepo = (path: string): RecordCheck => ({ path, work_tree: '/repo', ignored: false, pattern: '/agents/a/agent.cassette.json', warn: true });

describe('recording inside a git work tree', () => {
  it('the run configuration warns while recording to a path git would commit; Add to .gitignore fixes it', async () => {
    const ctx = await renderApp();
    ctx.backend.recordChecks['agent.cassette.json'] = inRepo('/repo/agents/a/agent.cassette.json');
    act(() => {
      ctx.dbg.getState().openConfig(true);
    });
    expect(screen.queryByTestId('record-warning')).toBeNull();
    fireEvent.click(await screen.findByTestId('run-record'));
    const warning = await screen.findByTestId('record-warning');
    expect(warning.textContent).toContain('/repo');
    expect(warning.textContent).toMatch(/git does not ignore it/);
    // The panel passes the path as configured; the fake answers by it.
    ctx.backend.recordChecks['/repo/agents/a/agent.cassette.json'] = ctx.backend.recordChecks['agent.cassette.json'];
    fireEvent.click(screen.getByTestId('record-gitignore'));
    const done = await screen.findByTestId('record-gitignored');
    expect(done.textContent).toContain('/agents/a/agent.cassette.json');
    expect(done.textContent).toContain('/repo/.gitignore');
    expect(cmds(ctx.backend, 'record_gitignore')).toEqual([{ cmd: 'record_gitignore', args: { record: '/repo/agents/a/agent.cassette.json' } }]);
    expect(screen.queryByTestId('record-warning')).toBeNull();
  });

  it('no warning outside a work tree or when git ignores the file; a refused path is shown', async () => {
    const ctx = await renderApp();
    ctx.backend.recordChecks['ignored.json'] = { ...inRepo('/repo/ignored.json'), ignored: true, warn: false };
    act(() => {
      ctx.dbg.getState().openConfig(true);
    });
    fireEvent.click(await screen.findByTestId('run-record'));
    await waitFor(() => expect(cmds(ctx.backend, 'record_check').length).toBeGreaterThan(0));
    expect(screen.queryByTestId('record-warning')).toBeNull();
    const path = screen.getByTestId('run-record-path');
    fireEvent.change(path, { target: { value: 'ignored.json' } });
    await waitFor(() => expect(cmds(ctx.backend, 'record_check').at(-1)?.args).toEqual({ record: 'ignored.json' }));
    expect(screen.queryByTestId('record-warning')).toBeNull();
    ctx.backend.failNext('record_check', { code: 'path_not_allowed', message: 'refused to record the cassette /etc/x.json: it is outside what the app may touch' });
    fireEvent.change(path, { target: { value: '/etc/x.json' } });
    expect((await screen.findByTestId('record-check-error')).textContent).toContain('refused to record');
  });

  it('a run that records where git would commit it says so in the run header', async () => {
    const ctx = await renderApp();
    ctx.backend.runInfo = { record: inRepo('/repo/agents/a/agent.cassette.json') };
    await act(async () => {
      await ctx.dbg.getState().start('step');
    });
    const w = await screen.findByTestId('record-warning');
    expect(w.textContent).toMatch(/not ignored by git/);
    expect(w.getAttribute('title')).toContain('/repo/agents/a/agent.cassette.json');
  });
});
