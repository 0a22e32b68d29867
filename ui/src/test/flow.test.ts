import { describe, expect, it } from 'vitest';
import { HANDLE_SIZE, createFlowMapper, edgeLabel, edgeStroke, nodeHandles, toFlowEdge, toFlowNode } from '../flow';
import { demoView, lokiView, viewEdge, viewNode } from '../fake/demo';

describe('View → React Flow mapping', () => {
  it('maps nodes with kind, position, size and derived/marker flags', () => {
    const v = demoView();
    const nodes = createFlowMapper().nodes(v.nodes, null);
    expect(nodes).toHaveLength(v.nodes.length);
    const answer = nodes.find((n) => n.id === 'answer')!;
    expect(answer.type).toBe('sy');
    expect(answer.position).toEqual({ x: 0, y: 220 });
    expect([answer.width, answer.height]).toEqual([220, 64]);
    expect(answer.data).toMatchObject({ kind: 'call_llm', derived: false, marker: false, warnings: 1, summary: 'gpt-4o-mini · 1 tool' });
    const tools = nodes.find((n) => n.id === 'answer_tools')!;
    expect(tools.data.derived).toBe(true);
    const start = nodes.find((n) => n.id === '__start__')!;
    expect(start.data.marker).toBe(true);
    expect(start.data.derived).toBe(true); // markers are drawn like derived nodes
  });

  it('labels edges: conditions, default, fallback, other, dynamic and fan-out', () => {
    const base = { id: 'x', from: 'a', to: 'b', derived: false, dynamic: false, fanout: false };
    expect(edgeLabel(viewEdge({ ...base, kind: 'branch', label: 'state.x > 1' }))).toBe('state.x > 1');
    expect(edgeLabel(viewEdge({ ...base, kind: 'route', label: 'ship' }))).toBe('ship');
    expect(edgeLabel(viewEdge({ ...base, kind: 'default', label: null }))).toBe('default');
    expect(edgeLabel(viewEdge({ ...base, kind: 'fallback', label: null }))).toBe('fallback');
    expect(edgeLabel(viewEdge({ ...base, kind: 'on_other', label: null }))).toBe('other');
    expect(edgeLabel(viewEdge({ ...base, kind: 'next', label: null, dynamic: true }))).toBe('dynamic');
    expect(edgeLabel(viewEdge({ ...base, kind: 'next', label: null, fanout: true }))).toBe('fan-out');
    expect(edgeLabel(viewEdge({ ...base, kind: 'static', label: null }))).toBeNull();
  });

  it('styles derived edges dashed and dynamic edges distinctly', () => {
    const v = lokiView();
    const edges = createFlowMapper().edges(v.edges, null);
    const route = edges.find((e) => e.id === 'e5')!;
    expect(route.source).toBe('approve');
    expect(route.target).toBe('shipped');
    expect(route.className).toContain('sy-edge-derived');
    expect(route.data?.label).toBe('ship');
    const dyn = edges.find((e) => e.id === 'e9')!;
    expect(dyn.className).toContain('sy-edge-dynamic');
    expect(dyn.data?.label).toBe('dynamic');
    const fan = edges.find((e) => e.id === 'e0')!;
    expect(fan.className).toContain('sy-edge-fanout');

    const dynStroke = edgeStroke({ kind: 'next', dynamic: true, derived: true });
    const derivedStroke = edgeStroke({ kind: 'route', derived: true });
    const plain = edgeStroke({ kind: 'next' });
    expect(derivedStroke.dash).toBeTruthy();
    expect(plain.dash).toBeUndefined();
    expect(dynStroke.dash).not.toBe(derivedStroke.dash);
    expect(dynStroke.stroke).not.toBe(plain.stroke);
    expect(edgeStroke({ kind: 'next', fanout: true }).width).toBeGreaterThan(plain.width);
  });

  it('numbers parallel edges between the same two nodes', () => {
    const edges = createFlowMapper().edges(demoView().edges, null);
    const b0 = edges.find((e) => e.id === 'e5')!;
    const b1 = edges.find((e) => e.id === 'e6')!;
    expect([b0.data?.parallel, b0.data?.parallelCount]).toEqual([0, 2]);
    expect([b1.data?.parallel, b1.data?.parallelCount]).toEqual([1, 2]);
    expect(edges.find((e) => e.id === 'e1')!.data?.parallelCount).toBe(1);
  });

  it('reuses node and edge objects that did not change (stable identity for memoized nodes)', () => {
    const m = createFlowMapper();
    const v1 = demoView();
    const n1 = m.nodes(v1.nodes, null);
    const e1 = m.edges(v1.edges, null);
    const v2 = demoView(); // a fresh View with one node moved
    v2.nodes.find((n) => n.id === 'count')!.x = 99;
    const n2 = m.nodes(v2.nodes, null);
    const e2 = m.edges(v2.edges, null);
    for (let i = 0; i < n1.length; i++) {
      if (n1[i].id === 'count') expect(n2[i]).not.toBe(n1[i]);
      else expect(n2[i]).toBe(n1[i]);
    }
    e1.forEach((e, i) => expect(e2[i]).toBe(e));
    expect(n2.find((n) => n.id === 'count')!.position.x).toBe(99);
    // Selecting a node only replaces that node.
    const n3 = m.nodes(v2.nodes, 'answer');
    expect(n3.filter((n, i) => n !== n2[i]).map((n) => n.id)).toEqual(['answer']);
    expect(n3.find((n) => n.id === 'answer')!.selected).toBe(true);
  });

  it('handles 2,000 nodes quickly and keeps them all', () => {
    const v = demoView();
    const nodes = Array.from({ length: 2000 }, (_, i) => ({ ...v.nodes[1], id: `n${i}`, x: (i % 40) * 240, y: Math.floor(i / 40) * 100 }));
    const edges = nodes.slice(1).map((n, i) => viewEdge({ id: `e${i}`, from: `n${i}`, to: n.id, kind: 'static' }));
    const m = createFlowMapper();
    const t0 = performance.now();
    const a = m.nodes(nodes, null);
    m.edges(edges, null);
    const b = m.nodes(nodes.map((n) => ({ ...n })), 'n5');
    const dt = performance.now() - t0;
    expect(a).toHaveLength(2000);
    expect(b.filter((n, i) => n !== a[i])).toHaveLength(1);
    expect(dt).toBeLessThan(500);
  });

  it('single helpers', () => {
    expect(toFlowNode(viewNode({ id: 'a', kind: 'llm', derived: false, x: 1, y: 2 })).width).toBe(220);
    expect(toFlowEdge(viewEdge({ id: 'e', from: 'a', to: 'b', kind: 'fallback' })).data?.label).toBe('fallback');
  });

  it('declares the handles of every node, so React Flow can cull nodes it has not measured', () => {
    const n = toFlowNode(viewNode({ id: 'a', kind: 'llm', derived: false, x: 1, y: 2, w: 200, h: 50 }));
    expect(n.handles).toEqual(nodeHandles(200, 50));
    const [target, source] = nodeHandles(200, 50);
    // Top-centre target and bottom-centre source, centred on the node's edges like .sy-handle.
    expect(target).toMatchObject({ type: 'target', position: 'top', x: 100 - HANDLE_SIZE / 2, y: -HANDLE_SIZE / 2 });
    expect(source).toMatchObject({ type: 'source', position: 'bottom', x: 100 - HANDLE_SIZE / 2, y: 50 - HANDLE_SIZE / 2 });
    const marker = toFlowNode(viewNode({ id: '__start__', kind: '__start__', derived: true, x: 0, y: 0, w: 120, h: 40 }));
    expect(marker.handles?.[1]).toMatchObject({ x: 60 - HANDLE_SIZE / 2, y: 40 - HANDLE_SIZE / 2 });
  });
});
