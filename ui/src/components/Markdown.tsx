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
import ReactMarkdown, { type Components, type ExtraProps } from 'react-markdown';
import remarkGfm from 'remark-gfm';
import { maskSecrets, safeUrl } from '../untrusted';
import { ExternalLink } from './ExternalLink';
import './markdown.css';

/** Elements Markdown (with GFM) produces; anything else is unwrapped to its contents. */
const ALLOWED = [
  'p', 'br', 'hr', 'em', 'strong', 'del', 'code', 'pre', 'blockquote',
  'ul', 'ol', 'li', 'input',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6',
  'table', 'thead', 'tbody', 'tr', 'th', 'td',
  'a', 'img', 'sup', 'section',
];

type HNode = { type: string; tagName?: string; properties?: Record<string, unknown>; data?: Record<string, unknown>; children?: HNode[] };

/** A rehype step before the URL transform: keep each link's and image's original URL (for tooltips). */
function rehypeKeepRawUrls() {
  return (tree: HNode) => {
    const walk = (n: HNode, depth: number) => {
      if (depth > 400) return;
      if (n.type === 'element' && n.properties) {
        const raw = n.tagName === 'a' ? n.properties.href : n.tagName === 'img' ? n.properties.src : undefined;
        if (raw !== undefined) n.data = { ...(n.data ?? {}), rawUrl: String(raw) };
      }
      for (const c of n.children ?? []) walk(c, depth + 1);
    };
    walk(tree, 0);
  };
}

function rawUrlOf(node: ExtraProps['node']): string {
  const raw = (node?.data as Record<string, unknown> | undefined)?.rawUrl;
  return typeof raw === 'string' ? raw : '';
}

/** Cut long URLs in tooltips. */
const clip = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}…` : s);

const isWeb = (u: string | undefined): u is string => !!u && /^https?:/i.test(u);

const COMPONENTS: Components = {
  a({ href, title, children, node }) {
    const url = safeUrl(href);
    if (url) {
      return (
        <ExternalLink className="md-link" url={url} title={title ?? undefined}>
          {children}
        </ExternalLink>
      );
    }
    const raw = rawUrlOf(node);
    if (raw.startsWith('#')) {
      // A footnote reference or back reference: text (no navigation inside the app).
      return <span className="md-link-text">{children}</span>;
    }
    return (
      <span className="md-link-removed" title={`link removed (only http, https and mailto links are kept): ${clip(raw)}`}>
        {children}
      </span>
    );
  },
  img({ src, alt, title, node }) {
    const url = safeUrl(typeof src === 'string' ? src : undefined);
    const label = `🖼 ${alt || title || 'image'}`;
    if (isWeb(url)) {
      return (
        <ExternalLink className="md-img" url={url} title="image not loaded">
          {label}
        </ExternalLink>
      );
    }
    const raw = rawUrlOf(node);
    return (
      <span className="md-img" title={`image not loaded${raw ? `: ${clip(raw)}` : ''}`}>
        {label}
      </span>
    );
  },
  input({ type, checked }) {
    // GFM task list items: a read-only box.
    return type === 'checkbox' ? <input type="checkbox" checked={!!checked} disabled readOnly /> : null;
  },
};

const urlTransform = (url: string) => safeUrl(url);
const REMARK = [remarkGfm];
const REHYPE = [rehypeKeepRawUrls];

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

function MarkdownBody({ text, className, testid }: { text: string; className?: string; testid?: string }) {
  return (
    <div className={`md${className ? ` ${className}` : ''}`} data-testid={testid} data-format="markdown">
      <ReactMarkdown
        remarkPlugins={REMARK}
        rehypePlugins={REHYPE}
        urlTransform={urlTransform}
        allowedElements={ALLOWED}
        unwrapDisallowed
        skipHtml={false}
        components={COMPONENTS}
      >
        {maskSecrets(text)}
      </ReactMarkdown>
    </div>
  );
}

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
