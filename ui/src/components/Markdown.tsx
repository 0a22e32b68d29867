// Untrusted text (LLM replies, interrupt questions) as Markdown, safely:
// - react-markdown + remark-gfm and NO rehype-raw: raw HTML in the text stays text (react-markdown
//   turns it into text nodes), so a `<script>` or `<img onerror>` is shown, never built. Only the
//   elements Markdown itself produces are allowed; anything else is unwrapped to its text.
// - URLs: `safeUrl` keeps absolute http, https and mailto URLs; everything else is removed.
// - Links never navigate the app's webview: http(s) and mailto links are `ExternalLink`s (a
//   click asks "Open in your browser?" with the full URL, then the shell opens it in the system
//   browser); removed links are text with the URL in the tooltip.
// - Images are never loaded (no fetch from the webview): the alt text is shown instead, as an
//   `ExternalLink` to the image when its URL is http(s).
// - API-key-shaped strings are masked before parsing (`maskSecrets`).
// `PlainText` is the other mode: the text as is, whitespace preserved.
import { Component, memo, type ReactNode } from 'react';
import { maskSecrets } from '../untrusted';
import { lazyComponent } from '../lazy';
import './markdown.css';

/**
 * If Markdown cannot be drawn (a parser bug, or an older webview without a regex feature the GFM
 * autolinker uses), the text is shown as plain text instead of failing the pane.
 */
class PlainOnError extends Component<{ children: ReactNode; fallback: ReactNode }, { failed: boolean }> {
  state = { failed: false };
  static getDerivedStateFromError() {
    return { failed: true };
  }
  render() {
    return this.state.failed ? this.props.fallback : this.props.children;
  }
}

/** `text` rendered as Markdown (see the rules at the top of this file). */
export const Markdown = memo(function Markdown({ text, className, testid }: { text: string; className?: string; testid?: string }) {
  return (
    // Keyed by the text: a new text tries Markdown again.
    <PlainOnError key={text} fallback={<PlainText className={className} testid={testid} text={text} />}>
      <MarkdownBody text={text} className={className} testid={testid} />
    </PlainOnError>
  );
});

/** Draws plain text until the Markdown chunk is loaded (at once once it is). */
const MarkdownBody = lazyComponent(
  () => import('./MarkdownBody').then((m) => m.MarkdownBody),
  (p: { text: string; className?: string; testid?: string }) => <PlainText {...p} />,
);

/** `text` as plain text (whitespace preserved), API-key shapes masked. */
export function PlainText({ text, className, testid, children }: { text: string; className?: string; testid?: string; children?: ReactNode }) {
  return (
    <div className={className} data-testid={testid} data-format="plain">
      {maskSecrets(text)}
      {children}
    </div>
  );
}

export type TextFormat = 'markdown' | 'plain';

/** The small "Markdown / Plain" switch (two radio buttons). */
export function FormatToggle({ value, onChange, testid = 'format-toggle' }: { value: TextFormat; onChange(f: TextFormat): void; testid?: string }) {
  return (
    <span className="fmt-toggle" role="radiogroup" aria-label="Show as" data-testid={testid} data-value={value}>
      {(['markdown', 'plain'] as const).map((f) => (
        <button
          key={f}
          type="button"
          className={`fmt-btn${value === f ? ' on' : ''}`}
          role="radio"
          aria-checked={value === f}
          data-format={f}
          title={f === 'markdown' ? 'Show as Markdown (links and images inert)' : 'Show the text as is'}
          onClick={() => onChange(f)}
        >
          {f === 'markdown' ? 'Markdown' : 'Plain'}
        </button>
      ))}
    </span>
  );
}
