// Links that lead outside the app (issue 27 item 8). The webview never follows one: every such
// link in the UI is an `ExternalLink`, whose click asks "Open in your browser?" with the full URL
// in one dialog (`ExternalLinkDialog`, mounted once by the app); Open hands the URL to the shell's
// `open_external`, which checks it again and starts the system browser. Cancel (or Esc) opens
// nothing. Only absolute http, https and mailto URLs are links (`safeUrl`); anything else is text.
import { createContext, useContext, useEffect, useRef, useState, type ReactNode } from 'react';
import { createStore, useStore } from 'zustand';
import { errorMessage } from '../backend';
import { safeUrl } from '../untrusted';

/** The link waiting for the user's answer (one at a time, for the whole window). */
export const externalLinks = createStore<{ url: string | null; ask(url: string): void; close(): void }>((set) => ({
  url: null,
  ask: (url) => set({ url }),
  close: () => set({ url: null }),
}));

/** Ask the user whether to open `url` (ignored unless it is an http, https or mailto URL). */
export function askExternal(url: string): void {
  const safe = safeUrl(url);
  if (safe) externalLinks.getState().ask(safe);
}

/**
 * How a link out is followed: `ask` (the app: the dialog above, then the shell's browser) or `tab`
 * (a plain web page such as the approvals inbox, which has no shell: a new tab, with no opener and
 * no referrer). Only where the click goes differs; which URLs are links (`safeUrl`) does not.
 */
export const LinkMode = createContext<'ask' | 'tab'>('ask');

/** Cut long URLs in tooltips (the dialog shows them whole). */
const clip = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}…` : s);

/** A link to `url` outside the app: a click asks first, and never navigates the webview. */
export function ExternalLink({ url, title, className, children }: { url: string; title?: string; className?: string; children: ReactNode }) {
  const mode = useContext(LinkMode);
  const safe = safeUrl(url);
  if (!safe) {
    return (
      <span className="md-link-removed" title={`link removed (only http, https and mailto links are kept): ${clip(url)}`}>
        {children}
      </span>
    );
  }
  if (mode === 'tab') {
    return (
      <a
        className={className ?? 'ext-link'}
        href={safe}
        target="_blank"
        rel="noopener noreferrer"
        data-testid="external-link"
        data-url={safe}
        title={title ? `${title}\n${clip(safe)}` : clip(safe)}
      >
        {children}
      </a>
    );
  }
  return (
    <a
      className={className ?? 'ext-link'}
      href={safe}
      data-testid="external-link"
      data-url={safe}
      title={title ? `${title}\n${clip(safe)}` : clip(safe)}
      onClick={(e) => {
        // Plain, Ctrl-, Shift- and middle clicks alike: ask, never navigate.
        e.preventDefault();
        e.stopPropagation();
        externalLinks.getState().ask(safe);
      }}
      onAuxClick={(e) => {
        e.preventDefault();
        e.stopPropagation();
        if (e.button === 1) externalLinks.getState().ask(safe);
      }}
      onDragStart={(e) => e.preventDefault()}
    >
      {children}
    </a>
  );
}

/** The question before a link is opened: the full URL, Cancel and Open. `open` is the shell's
 *  `open_external` (the app passes its backend's). */
export function ExternalLinkDialog({ open }: { open(url: string): Promise<unknown> }) {
  const url = useStore(externalLinks, (s) => s.url);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const cancel = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    setError(null);
    setBusy(false);
    if (!url) return;
    cancel.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        e.stopPropagation();
        externalLinks.getState().close();
      }
    };
    window.addEventListener('keydown', onKey, true);
    return () => window.removeEventListener('keydown', onKey, true);
  }, [url]);

  if (!url) return null;
  const scheme = url.slice(0, url.indexOf(':'));
  const go = async () => {
    setBusy(true);
    setError(null);
    try {
      await open(url);
      externalLinks.getState().close();
    } catch (e) {
      setError(errorMessage(e));
      setBusy(false);
    }
  };
  return (
    <div className="modal-backdrop">
      <div className="modal link-dialog" role="dialog" aria-modal="true" aria-labelledby="link-title" data-testid="link-dialog" data-url={url}>
        <h2 id="link-title">{scheme === 'mailto' ? 'Open in your mail program?' : 'Open in your browser?'}</h2>
        <p className="small">This link leads outside Switchyard. Check where it goes before you open it:</p>
        <code className="mono link-url" data-testid="link-url">
          {url}
        </code>
        <p className="muted small">It came from text the app did not write (an agent file, a model&apos;s reply, a run&apos;s state).</p>
        {error ? (
          <div className="rc-error" role="alert" data-testid="link-error">
            {error}
          </div>
        ) : null}
        <div className="modal-actions">
          <button type="button" className="btn" data-testid="link-copy" onClick={() => void navigator.clipboard?.writeText(url).catch(() => {})}>
            Copy link
          </button>
          <div className="spacer" />
          <button type="button" ref={cancel} className="btn" data-testid="link-cancel" onClick={() => externalLinks.getState().close()}>
            Cancel
          </button>
          <button type="button" className="btn primary" data-testid="link-open" disabled={busy} onClick={() => void go()}>
            Open
          </button>
        </div>
      </div>
    </div>
  );
}
