// Builds a standalone SVG of the current graph from the View (no DOM capture, no network).
import { edgeLabel, edgeStroke, isMarker, kindStyle } from './flow';
import type { View } from './types';

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

const COLORS = {
  light: { bg: '#ffffff', node: '#ffffff', text: '#1f2937', muted: '#6b7280', border: '#cbd5e1', edge: '#94a3b8', branch: '#4f7cff', fallback: '#dc2626', def: '#94a3b8', dynamic: '#a855f7', label: '#f8fafc' },
  dark: { bg: '#111318', node: '#1b1e26', text: '#e5e7eb', muted: '#9ca3af', border: '#374151', edge: '#6b7280', branch: '#7b9cff', fallback: '#f87171', def: '#6b7280', dynamic: '#c084fc', label: '#1b1e26' },
};

export function buildSvg(view: View, dark = false): string {
  const c = dark ? COLORS.dark : COLORS.light;
  const pos = new Map(view.nodes.map((n) => [n.id, { x: n.x, y: n.y, w: n.w ?? 220, h: n.h ?? 64 }]));
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (const p of pos.values()) {
    minX = Math.min(minX, p.x);
    minY = Math.min(minY, p.y);
    maxX = Math.max(maxX, p.x + p.w);
    maxY = Math.max(maxY, p.y + p.h);
  }
  if (!Number.isFinite(minX)) {
    minX = minY = 0;
    maxX = maxY = 100;
  }
  const pad = 40;
  const W = Math.ceil(maxX - minX + pad * 2);
  const H = Math.ceil(maxY - minY + pad * 2);
  const ox = pad - minX;
  const oy = pad - minY;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="DejaVu Sans, Inter, Helvetica, Arial, sans-serif">`,
    `<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="${c.edge}"/></marker></defs>`,
    `<rect width="100%" height="100%" fill="${c.bg}"/>`,
  );
  const strokeOf = (v: string) =>
    v === 'var(--edge-branch)' ? c.branch : v === 'var(--edge-fallback)' ? c.fallback : v === 'var(--edge-dynamic)' ? c.dynamic : v === 'var(--edge-default)' ? c.def : c.edge;
  const labels: string[] = [];
  for (const e of view.edges) {
    const a = pos.get(e.from);
    const b = pos.get(e.to);
    if (!a || !b) continue;
    const sx = a.x + a.w / 2 + ox;
    const sy = a.y + a.h + oy;
    const tx = b.x + b.w / 2 + ox;
    const ty = b.y + oy;
    const dy = Math.max(40, Math.abs(ty - sy) / 2);
    const d = `M${sx},${sy} C${sx},${sy + dy} ${tx},${ty - dy} ${tx},${ty}`;
    const s = edgeStroke(e);
    parts.push(
      `<path d="${d}" fill="none" stroke="${strokeOf(s.stroke)}" stroke-width="${s.width}"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''} marker-end="url(#arrow)" data-kind="${esc(e.kind)}"/>`,
    );
    const label = edgeLabel(e);
    if (label) {
      const lx = (sx + tx) / 2;
      const ly = (sy + ty) / 2;
      const t = clip(label, 36);
      const lw = t.length * 6.2 + 12;
      labels.push(
        `<g><rect x="${lx - lw / 2}" y="${ly - 9}" width="${lw}" height="18" rx="4" fill="${c.label}" stroke="${c.border}"/>` +
          `<text x="${lx}" y="${ly + 4}" font-size="11" text-anchor="middle" fill="${e.dynamic ? c.dynamic : c.text}">${esc(t)}</text></g>`,
      );
    }
  }
  for (const n of view.nodes) {
    const p = pos.get(n.id)!;
    const x = p.x + ox;
    const y = p.y + oy;
    const k = kindStyle(n.kind);
    const derived = n.derived || isMarker(n.kind);
    if (isMarker(n.kind)) {
      parts.push(
        `<g data-id="${esc(n.id)}"><rect x="${x}" y="${y}" width="${p.w}" height="${p.h}" rx="${p.h / 2}" fill="${c.node}" stroke="${k.color}" stroke-width="1.5" stroke-dasharray="5 3"/>` +
          `<text x="${x + p.w / 2}" y="${y + p.h / 2 + 4}" font-size="12" text-anchor="middle" fill="${c.text}">${n.kind === '__start__' ? 'start' : 'end'}</text></g>`,
      );
      continue;
    }
    parts.push(
      `<g data-id="${esc(n.id)}"><rect x="${x}" y="${y}" width="${p.w}" height="${p.h}" rx="8" fill="${c.node}" stroke="${derived ? c.muted : c.border}" stroke-width="1.2"${derived ? ' stroke-dasharray="5 3"' : ''}/>` +
        `<rect x="${x}" y="${y}" width="4" height="${p.h}" rx="2" fill="${k.color}"/>` +
        `<text x="${x + 14}" y="${y + 24}" font-size="13" font-weight="600" fill="${c.text}">${esc(k.icon)} ${esc(clip(n.id, 26))}</text>` +
        `<text x="${x + 14}" y="${y + 44}" font-size="11" fill="${c.muted}">${esc(clip(`${k.label}${n.summary ? ` · ${n.summary}` : ''}`, 34))}</text>` +
        ((n.errors ?? 0) > 0 ? `<circle cx="${x + p.w - 12}" cy="${y + 12}" r="8" fill="${c.fallback}"/><text x="${x + p.w - 12}" y="${y + 16}" font-size="10" text-anchor="middle" fill="#fff">${n.errors}</text>` : '') +
        `</g>`,
    );
  }
  parts.push(...labels, '</svg>');
  return parts.join('\n');
}

/** Render the SVG to a PNG (base64, no data: prefix) through an off-screen canvas. */
export function svgToPngBase64(svg: string, scale = 2): Promise<string> {
  return new Promise((resolve, reject) => {
    const m = /width="(\d+)" height="(\d+)"/.exec(svg);
    const w = m ? Number(m[1]) : 800;
    const h = m ? Number(m[2]) : 600;
    const img = new Image();
    const url = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
    img.onload = () => {
      try {
        const canvas = document.createElement('canvas');
        canvas.width = Math.min(16384, w * scale);
        canvas.height = Math.min(16384, h * scale);
        const ctx = canvas.getContext('2d');
        if (!ctx) throw new Error('no 2D canvas');
        ctx.scale(canvas.width / w, canvas.height / h);
        ctx.drawImage(img, 0, 0);
        const data = canvas.toDataURL('image/png');
        resolve(data.slice(data.indexOf(',') + 1));
      } catch (e) {
        reject(e);
      } finally {
        URL.revokeObjectURL(url);
      }
    };
    img.onerror = () => {
      URL.revokeObjectURL(url);
      reject(new Error('could not render the SVG'));
    };
    img.src = url;
  });
}
