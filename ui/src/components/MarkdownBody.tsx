// The Markdown renderer of Markdown.tsx (react-markdown + remark-gfm, the rules are there): a
// chunk of its own, loaded when Markdown is first shown or once the window is interactive.
import ReactMarkdown, { type Components, type ExtraProps } from 'react-markdown';
import remarkGfm from 'remark-gfm';
import { maskSecrets, safeUrl } from '../untrusted';
import { ExternalLink } from './ExternalLink';

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

export function MarkdownBody({ text, className, testid }: { text: string; className?: string; testid?: string }) {
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
