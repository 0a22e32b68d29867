//! Automatic layered (Sugiyama-style) layout of a [`Graph`] for the canvas: top to bottom, the
//! entry in the top layer. Positions the user drags win over these (the session keeps them in the
//! sidecar); this is the layout of everything else and of "relayout".
//!
//! Phases, none recursive (explicit stacks and queues only), each linear or `n log n` per pass:
//!
//! 1. **Cycle breaking**: DFS from the entry following out-edges in routing order
//!    ([`Graph::edges_ordered`]); back edges are reversed for layering, and so is every edge into
//!    the entry (so it stays on top). Nodes unreachable from the entry are DFS roots afterwards
//!    (sources first, in declaration order), so nothing is dropped.
//! 2. **Layering**: longest path from the top; sources other than the entry are then pulled down
//!    to just above their highest successor so they do not float at the top with long edges.
//! 3. **Long edges** are split by dummy nodes, one per layer crossed (within a budget proportional
//!    to the graph; longer edges beyond it are ignored by the next two phases).
//! 4. **Crossing reduction**: barycenter sweeps alternating down and up; a parent's out-edges
//!    keep their routing order (port offsets); ties go to declaration order; the ordering with the
//!    fewest crossings (Barth–Jünger–Mutzel count) is kept. Same graph, same layout.
//! 5. **Coordinates**: alternating passes pull each node's centre towards the mean centre of its
//!    neighbours; each layer is solved exactly (weighted least squares under "keep the order and
//!    the minimum gaps", pool-adjacent-violators), so boxes never overlap. Dummies pull harder,
//!    which keeps long edges straight.
//!
//! **Map lanes** (Loki map branch chains, [`Graph::lanes`]) are kept together: a map's own
//! continuation (`next`, `fallback`) is layered below every node of its lane; in each layer a
//! lane's nodes (those in that lane only) are adjacent, with [`LANE_PAD`] of room on both sides
//! for the lane's box; and a last pass moves any other box (or long edge) out of the span of a
//! lane's box. Nodes shared by several lanes get the same room around them.
//!
//! Sizes come from the label ([`node_size`]); the gap between layers leaves room for edge labels.
//! Coordinates are the top-left corners of the boxes, the whole drawing starts at (0, 0). Long
//! edges come with the points they pass through (one per layer crossed), so the canvas can draw
//! them around the boxes instead of through them.

use crate::graph::{END, EdgeKind, GNode, Graph, START};
use petgraph::visit::NodeIndexable;
use serde::Serialize;

/// Height of a node box.
pub const NODE_H: f64 = 64.0;
/// Width bounds of a node box (the width follows the label).
pub const MIN_W: f64 = 160.0;
pub const MAX_W: f64 = 280.0;
/// Size of the derived `__start__` / `__end__` markers.
pub const MARKER_W: f64 = 112.0;
pub const MARKER_H: f64 = 40.0;
/// Vertical space between layers (edge labels sit in it).
pub const LAYER_GAP: f64 = 88.0;
/// Horizontal space between neighbouring boxes of a layer.
pub const NODE_GAP: f64 = 48.0;

/// Room kept around the nodes of a map lane for the box the canvas draws around them (the canvas
/// draws the box this far outside the nodes, its label in the top padding).
pub const LANE_PAD: f64 = 14.0;

const DUMMY_W: f64 = 16.0;
const DUMMY_GAP: f64 = 16.0;
const MAX_SWEEPS: usize = 8;
const PLACE_ROUNDS: usize = 4;

/// One node's box: top-left corner and size, in canvas pixels.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeBox {
    pub id: String,
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Layout {
    /// In [`Graph::nodes_ordered`] order, one per node.
    pub nodes: Vec<NodeBox>,
    /// Extent of all boxes (they start at 0, 0).
    pub width: f64,
    pub height: f64,
    /// Per edge of [`Graph::edges_ordered`]: the points (x, y) a long edge passes through, from
    /// its source to its target, one per layer crossed; empty for an edge between neighbouring
    /// layers (and for self-loops and the few long edges beyond the budget).
    pub points: Vec<Vec<(f64, f64)>>,
}

/// Box size of a node: the `__start__` / `__end__` markers (kind = id = the marker) are small;
/// other nodes are `NODE_H` high and as
/// wide as the longer of their id (bold, ~8 px a character) and summary (~7 px), clamped to
/// `MIN_W..=MAX_W` (the canvas truncates longer labels).
pub fn node_size(n: &GNode) -> (f64, f64) {
    if (n.kind == START || n.kind == END) && n.id == n.kind {
        return (MARKER_W, MARKER_H);
    }
    let id = n.id.chars().count() as f64 * 8.0;
    let summary = n.summary.chars().count() as f64 * 7.0;
    ((id.max(summary) + 32.0).clamp(MIN_W, MAX_W), NODE_H)
}

/// Lay out the graph. Never fails; every node gets a box.
pub fn layout(g: &Graph) -> Layout {
    compute(g).layout
}

/// The layout plus what the tests check it against.
#[cfg_attr(not(test), allow(dead_code))]
struct Detail {
    layout: Layout,
    /// Layer of each node, in `nodes_ordered` order.
    layer: Vec<usize>,
    /// Per edge of `edges_ordered`: reversed for layering (a back edge or an edge into the entry).
    back: Vec<bool>,
}

fn compute(g: &Graph) -> Detail {
    let order = g.nodes_ordered();
    let n = order.len();
    let mut dense = vec![usize::MAX; g.g.node_bound()];
    for (i, &ix) in order.iter().enumerate() {
        dense[ix.index()] = i;
    }
    let edges: Vec<(usize, usize)> = g
        .edges_ordered()
        .iter()
        .map(|(a, b, _)| (dense[a.index()], dense[b.index()]))
        .collect();
    let entry = g.entry.map(|e| dense[e.index()]).filter(|&e| e < n);
    let sizes: Vec<(f64, f64)> = order.iter().map(|&ix| node_size(&g.g[ix])).collect();

    let branch: Vec<bool> = g
        .edges_ordered()
        .iter()
        .map(|(_, _, e)| e.kind == EdgeKind::MapBranch)
        .collect();
    // Lanes in dense indices (the map left out of its own lane), and each node's group: the one
    // lane it is in (`0..lanes.len()`), or its own group when several lanes share it.
    let lanes: Vec<(usize, Vec<usize>)> = g
        .lanes
        .iter()
        .filter_map(|l| {
            let m = dense[g.index.get(&l.map)?.index()];
            let mut members: Vec<usize> = l
                .nodes
                .iter()
                .filter_map(|id| g.index.get(id))
                .map(|ix| dense[ix.index()])
                .filter(|&v| v < n && v != m)
                .collect();
            members.sort_unstable();
            members.dedup();
            Some((m, members))
        })
        .collect();
    let mut in_lanes = vec![0usize; n];
    let mut group: Vec<Option<usize>> = vec![None; n];
    for (li, (_, members)) in lanes.iter().enumerate() {
        for &v in members {
            in_lanes[v] += 1;
            group[v] = Some(li);
        }
    }
    for v in 0..n {
        if in_lanes[v] > 1 {
            group[v] = Some(lanes.len() + v);
        }
    }

    let back = break_cycles(n, &edges, entry);
    // Layering edges (top, bottom), self-loops left out; indices into `edges` kept.
    let dag: Vec<(usize, usize, usize)> = edges
        .iter()
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(e, &(a, b))| if back[e] { (b, a, e) } else { (a, b, e) })
        .collect();
    let layering = with_lane_order(n, &dag, &edges, &branch, &lanes);
    let layer = assign_layers(n, &layering, entry);
    let mut lg = LayeredGraph::build(n, &sizes, &layer, &dag, &group);
    lg.reduce_crossings();
    lg.keep_lanes_together();
    let mut xs = lg.place();
    lg.clear_lanes(&mut xs, lanes.len());

    // Vertical: each layer as high as its tallest box; smaller boxes centred in it.
    let nl = lg.layers.len();
    let mut layer_h = vec![0.0f64; nl];
    for (v, &(_, h)) in sizes.iter().enumerate() {
        layer_h[layer[v]] = layer_h[layer[v]].max(h);
    }
    let mut top = vec![0.0; nl];
    let mut y = 0.0;
    for l in 0..nl {
        if layer_h[l] == 0.0 {
            layer_h[l] = NODE_H;
        }
        top[l] = y;
        y += layer_h[l] + LAYER_GAP;
    }
    let min_left = (0..n)
        .map(|v| xs[v] - sizes[v].0 / 2.0)
        .fold(f64::INFINITY, f64::min);
    let mut out = Layout {
        points: vec![Vec::new(); edges.len()],
        ..Layout::default()
    };
    for (e, chain) in &lg.chains {
        let mut pts: Vec<(f64, f64)> = chain
            .iter()
            .map(|&d| {
                let l = lg.vlayer[d];
                (xs[d] - min_left, top[l] + layer_h[l] / 2.0)
            })
            .collect();
        if back[*e] {
            pts.reverse();
        }
        out.points[*e] = pts;
    }
    for (v, &ix) in order.iter().enumerate() {
        let (w, h) = sizes[v];
        let b = NodeBox {
            id: g.g[ix].id.clone(),
            x: xs[v] - w / 2.0 - min_left,
            y: top[layer[v]] + (layer_h[layer[v]] - h) / 2.0,
            w,
            h,
        };
        out.width = out.width.max(b.x + w);
        out.height = out.height.max(b.y + h);
        out.nodes.push(b);
    }
    Detail {
        layout: out,
        layer,
        back,
    }
}

/// Compressed adjacency: `targets[start[v]..start[v + 1]]`, in the order given.
fn csr(n: usize, pairs: impl Iterator<Item = (usize, usize)> + Clone) -> (Vec<usize>, Vec<usize>) {
    let mut start = vec![0usize; n + 1];
    for (a, _) in pairs.clone() {
        start[a + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut targets = vec![0usize; start[n]];
    for (a, b) in pairs {
        targets[fill[a]] = b;
        fill[a] += 1;
    }
    (start, targets)
}

/// Phase 1: which edges to reverse. DFS in routing order from the entry, then from the remaining
/// sources, then from whatever is left (cycles unreachable from anything else).
fn break_cycles(n: usize, edges: &[(usize, usize)], entry: Option<usize>) -> Vec<bool> {
    let (start, out) = csr(n, edges.iter().enumerate().map(|(e, &(a, _))| (a, e)));
    let mut indeg = vec![0usize; n];
    for &(a, b) in edges {
        if a != b {
            indeg[b] += 1;
        }
    }
    let mut back = vec![false; edges.len()];
    let mut state = vec![0u8; n]; // 0 new, 1 on the stack, 2 done
    let mut stack: Vec<(usize, usize)> = Vec::new(); // (node, next out-edge slot)
    let roots = entry
        .into_iter()
        .chain((0..n).filter(|&v| indeg[v] == 0))
        .chain(0..n);
    for root in roots {
        if state[root] != 0 {
            continue;
        }
        state[root] = 1;
        stack.push((root, start[root]));
        while let Some(&(u, k)) = stack.last() {
            if k == start[u + 1] {
                state[u] = 2;
                stack.pop();
                continue;
            }
            stack.last_mut().unwrap().1 += 1;
            let e = out[k];
            let v = edges[e].1;
            match state[v] {
                0 => {
                    state[v] = 1;
                    stack.push((v, start[v]));
                }
                1 if v != u => back[e] = true,
                _ => {}
            }
        }
    }
    if let Some(en) = entry {
        for (e, &(a, b)) in edges.iter().enumerate() {
            if b == en && a != en {
                back[e] = true;
            }
        }
    }
    back
}

/// The layering edges plus, for each lane, an edge from every lane node to each target of the
/// map's own edges (its `next` and `fallback`, not its branch), so that what follows a map comes
/// after its lane. An edge that would close a cycle is left out.
fn with_lane_order(
    n: usize,
    dag: &[(usize, usize, usize)],
    edges: &[(usize, usize)],
    branch: &[bool],
    lanes: &[(usize, Vec<usize>)],
) -> Vec<(usize, usize, usize)> {
    let mut out = dag.to_vec();
    if lanes.is_empty() {
        return out;
    }
    // Each check is a search of the whole graph: bounded work on graphs with very many lanes.
    let mut budget: usize = 20_000_000;
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b, _) in dag {
        adj[a].push(b);
    }
    let mut seen = vec![usize::MAX; n];
    let mut stack = Vec::new();
    let mut check = 0usize;
    for (m, members) in lanes {
        let after: Vec<usize> = edges
            .iter()
            .enumerate()
            .filter(|&(e, &(a, b))| a == *m && b != *m && !branch[e] && !members.contains(&b))
            .map(|(_, &(_, b))| b)
            .collect();
        for &s in &after {
            for &u in members {
                let cost = n + out.len();
                if budget < cost || adj[u].contains(&s) {
                    continue;
                }
                budget -= cost;
                // Does `s` reach `u`? Then `u -> s` would close a cycle.
                check += 1;
                stack.clear();
                stack.push(s);
                seen[s] = check;
                let mut cycle = s == u;
                while let Some(x) = stack.pop() {
                    if cycle {
                        break;
                    }
                    for &y in &adj[x] {
                        if seen[y] != check {
                            if y == u {
                                cycle = true;
                            }
                            seen[y] = check;
                            stack.push(y);
                        }
                    }
                }
                if !cycle {
                    adj[u].push(s);
                    out.push((u, s, usize::MAX));
                }
            }
        }
    }
    out
}

/// Phase 2: longest path from the sources (Kahn order), then sources other than the entry moved
/// down to one layer above their highest successor.
fn assign_layers(n: usize, dag: &[(usize, usize, usize)], entry: Option<usize>) -> Vec<usize> {
    let (start, succ) = csr(n, dag.iter().map(|&(a, b, _)| (a, b)));
    let mut indeg = vec![0usize; n];
    for &(_, b, _) in dag {
        indeg[b] += 1;
    }
    let sources: Vec<usize> = (0..n).filter(|&v| indeg[v] == 0).collect();
    let mut layer = vec![0usize; n];
    let mut queue = sources.clone();
    let mut head = 0;
    while head < queue.len() {
        let u = queue[head];
        head += 1;
        for &v in &succ[start[u]..start[u + 1]] {
            layer[v] = layer[v].max(layer[u] + 1);
            indeg[v] -= 1;
            if indeg[v] == 0 {
                queue.push(v);
            }
        }
    }
    debug_assert_eq!(
        queue.len(),
        n,
        "reversing the DFS back edges leaves no cycle"
    );
    for u in sources {
        if Some(u) != entry && start[u] < start[u + 1] {
            layer[u] = succ[start[u]..start[u + 1]]
                .iter()
                .map(|&v| layer[v])
                .min()
                .unwrap()
                - 1;
        }
    }
    layer
}

/// The graph the last two phases work on: real nodes `0..n` then dummies, each in one layer.
struct LayeredGraph {
    n: usize,
    width: Vec<f64>,
    /// Tie-break key: declaration index (real) or (index of the upper end, 1 + edge) for dummies.
    key: Vec<(usize, usize)>,
    /// Neighbours in the layer above, with the port offset of the edge at that neighbour.
    up: Vec<Vec<(usize, f64)>>,
    /// Neighbours in the layer below, in routing order.
    down: Vec<Vec<usize>>,
    layers: Vec<Vec<usize>>,
    pos: Vec<usize>,
    /// Layer of every vertex (dummies included).
    vlayer: Vec<usize>,
    /// Lane group of every vertex (see `compute`); a dummy of an edge inside a lane is in it.
    group: Vec<Option<usize>>,
    /// Per split edge: its index in `edges` and its dummies, top to bottom.
    chains: Vec<(usize, Vec<usize>)>,
}

impl LayeredGraph {
    fn build(
        n: usize,
        sizes: &[(f64, f64)],
        layer: &[usize],
        dag: &[(usize, usize, usize)],
        group: &[Option<usize>],
    ) -> Self {
        let nl = layer.iter().copied().max().map_or(0, |m| m + 1);
        // Dummy budget: shortest edges first, so a few huge back edges cannot crowd out the rest.
        let budget = 4 * n + 4096;
        let mut long: Vec<usize> = (0..dag.len())
            .filter(|&i| layer[dag[i].1] - layer[dag[i].0] > 1)
            .collect();
        long.sort_by_key(|&i| (layer[dag[i].1] - layer[dag[i].0], i));
        let mut split = vec![false; dag.len()];
        let mut used = 0;
        for i in long {
            let d = layer[dag[i].1] - layer[dag[i].0] - 1;
            if used + d > budget {
                break;
            }
            used += d;
            split[i] = true;
        }
        let nv = n + used;
        let mut lg = LayeredGraph {
            n,
            width: sizes
                .iter()
                .map(|s| s.0)
                .chain(std::iter::repeat_n(DUMMY_W, used))
                .collect(),
            key: (0..n).map(|v| (v, 0)).collect(),
            up: vec![Vec::new(); nv],
            down: vec![Vec::new(); nv],
            layers: vec![Vec::new(); nl],
            pos: vec![0; nv],
            vlayer: Vec::new(),
            group: group.to_vec(),
            chains: Vec::new(),
        };
        let mut vlayer = layer.to_vec();
        for (i, &(a, b, e)) in dag.iter().enumerate() {
            let span = layer[b] - layer[a];
            if span == 1 {
                lg.down[a].push(b);
            } else if split[i] {
                let inside = match (group[a], group[b]) {
                    (Some(x), Some(y)) if x == y => Some(x),
                    _ => None,
                };
                let mut prev = a;
                let mut chain = Vec::with_capacity(span - 1);
                for l in layer[a] + 1..layer[b] {
                    let d = vlayer.len();
                    vlayer.push(l);
                    lg.key.push((a, 1 + e));
                    lg.group.push(inside);
                    lg.down[prev].push(d);
                    chain.push(d);
                    prev = d;
                }
                lg.down[prev].push(b);
                lg.chains.push((e, chain));
            }
        }
        for u in 0..nv {
            let k = lg.down[u].len() as f64;
            for (i, &v) in lg.down[u].iter().enumerate() {
                // Spread a node's out-edges by their routing order, within ±0.25 of its position.
                lg.up[v].push((u, ((i as f64 + 0.5) / k - 0.5) * 0.5));
            }
        }
        for (v, &l) in vlayer.iter().enumerate() {
            lg.layers[l].push(v);
        }
        for l in 0..nl {
            let mut row = std::mem::take(&mut lg.layers[l]);
            row.sort_by_key(|&v| lg.key[v]);
            lg.set_row(l, row);
        }
        lg.vlayer = vlayer;
        lg
    }

    /// After crossing reduction: in every layer the vertices of one lane become adjacent, at the
    /// mean position of the lane's vertices there, in the order they had.
    fn keep_lanes_together(&mut self) {
        for l in 0..self.layers.len() {
            let row = &self.layers[l];
            let mut mean: std::collections::HashMap<usize, (f64, usize)> = Default::default();
            for &v in row {
                if let Some(gr) = self.group[v] {
                    let e = mean.entry(gr).or_default();
                    e.0 += self.pos[v] as f64;
                    e.1 += 1;
                }
            }
            if mean.values().all(|&(_, k)| k < 2) {
                continue;
            }
            let mut items: Vec<(f64, usize, usize)> = row
                .iter()
                .map(|&v| match self.group[v] {
                    Some(gr) => {
                        let (s, k) = mean[&gr];
                        (s / k as f64, gr, self.pos[v])
                    }
                    None => (self.pos[v] as f64, usize::MAX, self.pos[v]),
                })
                .collect();
            items.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
            let row2: Vec<usize> = items.iter().map(|t| row[t.2]).collect();
            self.set_row(l, row2);
        }
    }

    /// Half the width a vertex needs in its row: its box, plus the lane padding of a lane node.
    fn half(&self, v: usize) -> f64 {
        self.width[v] / 2.0 + if v < self.n && self.group[v].is_some() { LANE_PAD } else { 0.0 }
    }

    /// After placement: no vertex of another group (box, lane padding or long edge) stays inside
    /// the horizontal span of a lane's box in the layers the lane covers. Whatever is left of the
    /// lane in such a layer moves left, whatever is right moves right, as a block.
    fn clear_lanes(&self, x: &mut [f64], lanes: usize) {
        for _round in 0..4 {
            let mut moved = false;
            for gr in 0..lanes {
                let members: Vec<usize> = (0..self.n).filter(|&v| self.group[v] == Some(gr)).collect();
                let Some(lmin) = members.iter().map(|&v| self.vlayer[v]).min() else {
                    continue;
                };
                let lmax = members.iter().map(|&v| self.vlayer[v]).max().unwrap();
                let lo = members.iter().map(|&v| x[v] - self.half(v)).fold(f64::INFINITY, f64::min);
                let hi = members.iter().map(|&v| x[v] + self.half(v)).fold(f64::NEG_INFINITY, f64::max);
                let mid = (lo + hi) / 2.0;
                for l in lmin..=lmax {
                    let row = &self.layers[l];
                    let first = row.iter().position(|&v| self.group[v] == Some(gr));
                    let last = row.iter().rposition(|&v| self.group[v] == Some(gr));
                    let (mut need_l, mut need_r) = (0.0f64, 0.0f64);
                    let mut side = vec![0i8; row.len()];
                    for (i, &v) in row.iter().enumerate() {
                        if self.group[v] == Some(gr) {
                            continue;
                        }
                        let left = match (first, last) {
                            (Some(f), _) if i < f => true,
                            (_, Some(t)) if i > t => false,
                            _ => x[v] < mid,
                        };
                        let gap = if v < self.n { NODE_GAP / 2.0 } else { DUMMY_GAP / 2.0 };
                        if left {
                            side[i] = -1;
                            need_l = need_l.max(x[v] + self.half(v) + gap - lo);
                        } else {
                            side[i] = 1;
                            need_r = need_r.max(hi - (x[v] - self.half(v) - gap));
                        }
                    }
                    for (i, &v) in row.iter().enumerate() {
                        if side[i] < 0 && need_l > 1e-6 {
                            x[v] -= need_l;
                            moved = true;
                        } else if side[i] > 0 && need_r > 1e-6 {
                            x[v] += need_r;
                            moved = true;
                        }
                    }
                }
            }
            if !moved {
                break;
            }
        }
    }

    fn set_row(&mut self, l: usize, row: Vec<usize>) {
        for (i, &v) in row.iter().enumerate() {
            self.pos[v] = i;
        }
        self.layers[l] = row;
    }

    /// One barycenter sweep, downwards (each layer ordered by its parents) or upwards.
    fn sweep(&mut self, downwards: bool) {
        let nl = self.layers.len();
        let order: Vec<usize> = if downwards {
            (1..nl).collect()
        } else {
            (0..nl.saturating_sub(1)).rev().collect()
        };
        let mut items: Vec<(f64, (usize, usize), usize)> = Vec::new();
        for l in order {
            items.clear();
            for &v in &self.layers[l] {
                let bary = if downwards {
                    let ns = &self.up[v];
                    if ns.is_empty() {
                        self.pos[v] as f64
                    } else {
                        ns.iter()
                            .map(|&(u, port)| self.pos[u] as f64 + port)
                            .sum::<f64>()
                            / ns.len() as f64
                    }
                } else {
                    let ns = &self.down[v];
                    if ns.is_empty() {
                        self.pos[v] as f64
                    } else {
                        ns.iter().map(|&u| self.pos[u] as f64).sum::<f64>() / ns.len() as f64
                    }
                };
                items.push((bary, self.key[v], v));
            }
            items.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let row = items.iter().map(|t| t.2).collect();
            self.set_row(l, row);
        }
    }

    /// Number of edge crossings between consecutive layers (sorted pairs + Fenwick tree).
    fn crossings(&self) -> usize {
        let mut total = 0;
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        let mut tree: Vec<usize> = Vec::new();
        for l in 0..self.layers.len().saturating_sub(1) {
            pairs.clear();
            for &u in &self.layers[l] {
                for &v in &self.down[u] {
                    pairs.push((self.pos[u], self.pos[v]));
                }
            }
            pairs.sort_unstable();
            let m = self.layers[l + 1].len();
            tree.clear();
            tree.resize(m + 1, 0);
            for (seen, &(_, b)) in pairs.iter().enumerate() {
                // Earlier edges ending right of `b` cross this one.
                let mut le = 0;
                let mut i = b + 1;
                while i > 0 {
                    le += tree[i];
                    i &= i - 1;
                }
                total += seen - le;
                let mut i = b + 1;
                while i <= m {
                    tree[i] += 1;
                    i += i & i.wrapping_neg();
                }
            }
        }
        total
    }

    /// Phase 4: sweeps until no crossing is left or `MAX_SWEEPS`; keeps the best ordering.
    fn reduce_crossings(&mut self) {
        self.sweep(true);
        let mut best = self.crossings();
        let mut best_layers = self.layers.clone();
        for i in 1..MAX_SWEEPS {
            if best == 0 {
                break;
            }
            self.sweep(i % 2 == 0);
            let c = self.crossings();
            if c < best {
                best = c;
                best_layers = self.layers.clone();
            }
        }
        for (l, row) in best_layers.into_iter().enumerate() {
            self.set_row(l, row);
        }
    }

    /// Minimum distance between the centres of two neighbours in a layer (lane nodes keep
    /// `LANE_PAD` of room towards anything not in their lane).
    fn sep(&self, a: usize, b: usize) -> f64 {
        let gap = match (a < self.n, b < self.n) {
            (true, true) => NODE_GAP,
            (false, false) => DUMMY_GAP,
            _ => (NODE_GAP + DUMMY_GAP) / 2.0,
        };
        let pad = if self.group[a] == self.group[b] {
            0.0
        } else {
            let lane = |v: usize| if v < self.n && self.group[v].is_some() { LANE_PAD } else { 0.0 };
            lane(a) + lane(b)
        };
        (self.width[a] + self.width[b]) / 2.0 + gap + pad
    }

    /// Phase 5: x of every centre.
    fn place(&self) -> Vec<f64> {
        let nv = self.width.len();
        let mut x = vec![0.0; nv];
        for row in &self.layers {
            let mut cur = 0.0;
            for (i, &v) in row.iter().enumerate() {
                if i > 0 {
                    cur += self.sep(row[i - 1], v);
                }
                x[v] = cur;
            }
            for &v in row {
                x[v] -= cur / 2.0;
            }
        }
        let nl = self.layers.len();
        let (mut target, mut weight, mut seps) = (Vec::new(), Vec::new(), Vec::new());
        // 0 = towards the layer above, 1 = below, 2 = both.
        let passes = (0..PLACE_ROUNDS).flat_map(|_| [0u8, 1]).chain([2]);
        for dir in passes {
            let order: Vec<usize> = if dir == 1 {
                (0..nl).rev().collect()
            } else {
                (0..nl).collect()
            };
            for l in order {
                let row = &self.layers[l];
                target.clear();
                weight.clear();
                seps.clear();
                for (i, &v) in row.iter().enumerate() {
                    if i > 0 {
                        seps.push(self.sep(row[i - 1], v));
                    }
                    let (mut sum, mut cnt) = (0.0, 0usize);
                    if dir != 1 {
                        for &(u, _) in &self.up[v] {
                            sum += x[u];
                            cnt += 1;
                        }
                    }
                    if dir != 0 {
                        for &u in &self.down[v] {
                            sum += x[u];
                            cnt += 1;
                        }
                    }
                    if cnt == 0 {
                        target.push(x[v]);
                        weight.push(1e-3);
                    } else {
                        target.push(sum / cnt as f64);
                        weight.push(cnt as f64 * if v < self.n { 1.0 } else { 4.0 });
                    }
                }
                let placed = solve_row(&target, &weight, &seps);
                for (i, &v) in row.iter().enumerate() {
                    x[v] = placed[i];
                }
            }
        }
        x
    }
}

/// Minimise Σ wᵢ(xᵢ − tᵢ)² subject to xᵢ₊₁ − xᵢ ≥ sepᵢ. With cᵢ the cumulative separations
/// and yᵢ = xᵢ − cᵢ this is isotonic regression of tᵢ − cᵢ, solved exactly by pooling adjacent
/// violators.
fn solve_row(target: &[f64], weight: &[f64], seps: &[f64]) -> Vec<f64> {
    let m = target.len();
    let mut c = vec![0.0; m];
    for i in 1..m {
        c[i] = c[i - 1] + seps[i - 1];
    }
    // Blocks: (Σw, Σw·t, count).
    let mut blocks: Vec<(f64, f64, usize)> = Vec::with_capacity(m);
    for i in 0..m {
        blocks.push((weight[i], weight[i] * (target[i] - c[i]), 1));
        while blocks.len() > 1 {
            let (w2, s2, k2) = blocks[blocks.len() - 1];
            let (w1, s1, k1) = blocks[blocks.len() - 2];
            if s1 / w1 <= s2 / w2 {
                break;
            }
            blocks.pop();
            *blocks.last_mut().unwrap() = (w1 + w2, s1 + s2, k1 + k2);
        }
    }
    let mut out = Vec::with_capacity(m);
    for (w, s, k) in blocks {
        let y = s / w;
        for _ in 0..k {
            out.push(y + c[out.len()]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{self, Dialect};
    use crate::graph::{self, EdgeKind, GEdge};
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    fn node(id: &str, order: usize) -> GNode {
        let derived = id == START || id == END;
        GNode {
            id: id.into(),
            kind: if derived {
                id.into()
            } else {
                "call_llm".into()
            },
            derived,
            summary: String::new(),
            span: None,
            order,
            dynamic_next: false,
        }
    }

    fn edge(order: usize) -> GEdge {
        GEdge {
            kind: EdgeKind::Static,
            label: None,
            derived: false,
            dynamic: false,
            fanout: false,
            order,
            span: None,
        }
    }

    /// A graph from node ids (declaration order) and edges; the entry is `__start__` when present,
    /// else the first node.
    fn build(ids: &[&str], edges: &[(&str, &str)]) -> Graph {
        let mut g = Graph::new(Dialect::Sherma, "t");
        for (i, id) in ids.iter().enumerate() {
            g.add_node(node(id, i));
        }
        let mut per_source: HashMap<&str, usize> = HashMap::new();
        for &(a, b) in edges {
            let k = per_source.entry(a).or_default();
            let (ia, ib) = (g.index[a], g.index[b]);
            g.add_edge(ia, ib, edge(*k));
            *k += 1;
        }
        g.entry = g
            .index
            .get(START)
            .or_else(|| ids.first().map(|f| &g.index[*f]))
            .copied();
        g
    }

    /// Every property the layout promises; panics with the graph's name otherwise.
    fn check(g: &Graph, what: &str) -> Detail {
        let d = compute(g);
        let l = &d.layout;
        let order = g.nodes_ordered();
        assert_eq!(l.nodes.len(), order.len(), "{what}: one box per node");
        for (b, &ix) in l.nodes.iter().zip(&order) {
            assert_eq!(b.id, g.g[ix].id, "{what}: boxes in nodes_ordered order");
            assert!(
                b.x.is_finite() && b.y.is_finite() && b.x >= -1e-6 && b.y >= 0.0,
                "{what}: {b:?}"
            );
            assert!(
                b.x + b.w <= l.width + 1e-6 && b.y + b.h <= l.height + 1e-6,
                "{what}: {b:?} outside"
            );
            if g.g[ix].kind == START {
                assert_eq!(
                    (b.w, b.h),
                    (MARKER_W, MARKER_H),
                    "{what}: the start marker is small"
                );
            }
        }
        // No overlaps: sweep by y, compare boxes whose vertical ranges meet.
        let mut by_y: Vec<&NodeBox> = l.nodes.iter().collect();
        by_y.sort_by(|a, b| a.y.total_cmp(&b.y));
        for i in 0..by_y.len() {
            let a = by_y[i];
            for b in &by_y[i + 1..] {
                if b.y >= a.y + a.h {
                    break;
                }
                let apart = a.x + a.w <= b.x + 1e-6 || b.x + b.w <= a.x + 1e-6;
                assert!(apart, "{what}: {a:?} overlaps {b:?}");
            }
        }
        let pos: HashMap<&str, &NodeBox> = l.nodes.iter().map(|b| (b.id.as_str(), b)).collect();
        for (e, (s, t, _)) in g.edges_ordered().iter().enumerate() {
            if s == t {
                continue;
            }
            let (a, b) = (pos[g.g[*s].id.as_str()], pos[g.g[*t].id.as_str()]);
            if d.back[e] {
                assert!(
                    b.y + b.h < a.y,
                    "{what}: back edge {} -> {} does not go up",
                    a.id,
                    b.id
                );
            } else {
                assert!(
                    a.y + a.h < b.y,
                    "{what}: edge {} -> {} does not go down",
                    a.id,
                    b.id
                );
            }
        }
        assert_eq!(l.points.len(), g.edges_ordered().len(), "{what}: points per edge");
        for (e, (s, t, _)) in g.edges_ordered().iter().enumerate() {
            let (a, b) = (pos[g.g[*s].id.as_str()], pos[g.g[*t].id.as_str()]);
            let (top, bottom) = if d.back[e] { (b, a) } else { (a, b) };
            for &(px, py) in &l.points[e] {
                assert!(px.is_finite() && py > top.y + top.h && py < bottom.y, "{what}: a point of {} -> {} outside its span", a.id, b.id);
            }
        }
        if let Some(entry) = g.entry {
            let i = order.iter().position(|&x| x == entry).unwrap();
            assert_eq!(d.layer[i], 0, "{what}: entry in the top layer");
            let e = &l.nodes[i];
            let top_bottom = l
                .nodes
                .iter()
                .map(|b| b.y + b.h)
                .fold(f64::INFINITY, f64::min);
            assert!(e.y < top_bottom, "{what}: a box lies above the entry");
        }
        d
    }

    fn boxes(l: &Layout) -> HashMap<String, (f64, f64)> {
        l.nodes.iter().map(|b| (b.id.clone(), (b.x, b.y))).collect()
    }

    fn centre(l: &Layout, id: &str) -> f64 {
        let b = l.nodes.iter().find(|b| b.id == id).unwrap();
        b.x + b.w / 2.0
    }

    #[test]
    fn empty_and_single() {
        let g = Graph::new(Dialect::Loki, "x");
        assert_eq!(layout(&g), Layout::default());
        let l = check(&build(&["only"], &[]), "single").layout;
        assert_eq!(
            (l.nodes[0].x, l.nodes[0].y, l.width, l.height),
            (0.0, 0.0, MIN_W, NODE_H)
        );
    }

    #[test]
    fn sizes_follow_labels() {
        assert_eq!(node_size(&node("a", 0)), (MIN_W, NODE_H));
        assert_eq!(node_size(&node(&"x".repeat(100), 0)), (MAX_W, NODE_H));
        let mid = node_size(&node(&"x".repeat(24), 0)).0;
        assert!(mid > MIN_W && mid < MAX_W, "{mid}");
        let mut s = node("a", 0);
        s.summary = "openai:gpt-4o-mini with tools".into();
        assert!(node_size(&s).0 > MIN_W);
        assert_eq!(node_size(&node(START, 0)), (MARKER_W, MARKER_H));
        // A declared node that happens to be called `__end__` is not a marker.
        let mut fake = node(END, 0);
        fake.kind = "llm".into();
        assert_eq!(node_size(&fake).1, NODE_H);
    }

    #[test]
    fn chain_is_vertical_and_centred() {
        let g = build(
            &[START, "a", "b", "c", END],
            &[(START, "a"), ("a", "b"), ("b", "c"), ("c", END)],
        );
        let l = check(&g, "chain").layout;
        let c0 = centre(&l, START);
        for id in ["a", "b", "c", END] {
            assert!(
                (centre(&l, id) - c0).abs() < 1e-6,
                "{id} not under the start"
            );
        }
        let ys: Vec<f64> = l.nodes.iter().map(|b| b.y).collect();
        assert!(ys.windows(2).all(|w| w[0] < w[1]), "{ys:?}");
    }

    #[test]
    fn branches_in_routing_order_and_parent_centred() {
        // Declared in the opposite order of routing: routing order decides left to right.
        let g = build(
            &["root", "right", "left", "join"],
            &[
                ("root", "left"),
                ("root", "right"),
                ("left", "join"),
                ("right", "join"),
            ],
        );
        let l = check(&g, "diamond").layout;
        assert!(centre(&l, "left") < centre(&l, "right"));
        let mid = (centre(&l, "left") + centre(&l, "right")) / 2.0;
        assert!(
            (centre(&l, "root") - mid).abs() < 1.0,
            "root not centred over its children"
        );
        assert!(
            (centre(&l, "join") - mid).abs() < 1.0,
            "join not centred under its parents"
        );
    }

    #[test]
    fn cycles_are_broken_from_the_entry() {
        // Loki-style: the entry is a declared node with an edge back into it.
        let g = build(
            &["start", "work", "check", "done"],
            &[
                ("start", "work"),
                ("work", "check"),
                ("check", "start"),
                ("check", "work"),
                ("check", "done"),
            ],
        );
        let d = check(&g, "loop");
        assert_eq!(d.layer, vec![0, 1, 2, 3]);
        assert_eq!(d.back.iter().filter(|b| **b).count(), 2);
        // A self-loop is neither forward nor back and does not disturb anything.
        let g = build(&["a", "b"], &[("a", "a"), ("a", "b")]);
        assert_eq!(check(&g, "self-loop").layer, vec![0, 1]);
    }

    #[test]
    fn unreachable_nodes_are_placed() {
        // `orphan` -> `entry` must not lift anything above the entry; `island` has no edges; `x <-> y`
        // is a cycle nobody reaches.
        let g = build(
            &["entry", "a", "orphan", "island", "x", "y", "feeder"],
            &[
                ("entry", "a"),
                ("orphan", "entry"),
                ("x", "y"),
                ("y", "x"),
                ("feeder", "a"),
            ],
        );
        let d = check(&g, "unreachable");
        assert_eq!(d.layout.nodes.len(), 7);
        // `feeder` only points at `a` (layer 1): pulled down next to it, not left at the top.
        assert_eq!(d.layer[6], 0);
        let g = build(
            &["entry", "a", "b", "c", "feeder"],
            &[("entry", "a"), ("a", "b"), ("b", "c"), ("feeder", "c")],
        );
        assert_eq!(check(&g, "feeder").layer, vec![0, 1, 2, 3, 2]);
        // No entry at all.
        let mut g = build(&["p", "q"], &[("p", "q"), ("q", "p")]);
        g.entry = None;
        check(&g, "no entry");
    }

    #[test]
    fn deterministic_and_independent_of_insertion_order() {
        let (ids, edges) = random_graph(300, 7);
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let edges: Vec<(&str, &str)> = edges
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let g = build(&ids, &edges);
        let a = layout(&g);
        assert_eq!(a, layout(&g));
        // Same graph, nodes inserted into petgraph in reverse (declaration `order` unchanged).
        let mut h = Graph::new(Dialect::Sherma, "t");
        for (i, id) in ids.iter().enumerate().rev() {
            h.add_node(node(id, i));
        }
        for (ix, e) in
            g.g.edge_indices()
                .map(|e| (g.g.edge_endpoints(e).unwrap(), g.g[e].clone()))
        {
            h.add_edge(h.index[&g.g[ix.0].id], h.index[&g.g[ix.1].id], e);
        }
        h.entry = Some(h.index[ids[0]]);
        assert_eq!(a, layout(&h));
    }

    #[test]
    fn adding_a_node_keeps_the_rest() {
        let ids = ["s", "a", "b", "c", "d", "e", "f", "g"];
        let edges = [
            ("s", "a"),
            ("s", "b"),
            ("a", "c"),
            ("b", "c"),
            ("c", "d"),
            ("d", "e"),
            ("d", "f"),
            ("e", "g"),
            ("f", "g"),
        ];
        let before = boxes(&check(&build(&ids, &edges), "before").layout);
        let mut ids2 = ids.to_vec();
        ids2.push("extra");
        let mut edges2 = edges.to_vec();
        edges2.push(("g", "extra"));
        let after = boxes(&check(&build(&ids2, &edges2), "after").layout);
        for id in ids {
            assert_eq!(before[id], after[id], "{id} moved");
        }
    }

    #[test]
    fn long_chain_does_not_overflow() {
        let n = 10_000;
        let ids: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut edges: Vec<(&str, &str)> = refs.windows(2).map(|w| (w[0], w[1])).collect();
        edges.push((refs[n - 1], refs[0]));
        edges.push((refs[n - 1], refs[n / 2]));
        edges.push((refs[1], refs[n - 2])); // long forward edge: many dummies
        let g = build(&refs, &edges);
        // Run on a small stack: any recursion over the depth would overflow it.
        let d = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || compute(&g).layer)
            .unwrap()
            .join()
            .expect("layout of a 10,000-deep chain");
        assert_eq!(d[n - 1], n - 1);
        check(&build(&refs, &edges), "10k chain");
    }

    /// Deterministic pseudo-random graph: layers of ~25 nodes, forward edges mostly to the next
    /// few layers, some back edges and some long ones.
    fn random_graph(n: usize, seed: u64) -> (Vec<String>, Vec<(String, String)>) {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut rnd = move |m: usize| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) as usize) % m.max(1)
        };
        let ids: Vec<String> = (0..n).map(|i| format!("node_{i}")).collect();
        let mut edges = Vec::new();
        for i in 1..n {
            // every node has a parent among the previous ~50
            edges.push((ids[i - 1 - rnd(i.min(50))].clone(), ids[i].clone()));
            if rnd(10) < 3 {
                edges.push((ids[i].clone(), ids[(i + 1 + rnd(60)).min(n - 1)].clone()));
            }
            if rnd(20) == 0 {
                edges.push((ids[i].clone(), ids[rnd(i)].clone()));
            }
            if rnd(100) == 0 {
                edges.push((ids[i].clone(), ids[rnd(n)].clone()));
            }
        }
        (ids, edges)
    }

    #[test]
    fn wide_random_graphs() {
        for (n, seed) in [(50, 1), (400, 2), (3_000, 3)] {
            let (ids, edges) = random_graph(n, seed);
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let edges: Vec<(&str, &str)> = edges
                .iter()
                .map(|(a, b)| (a.as_str(), b.as_str()))
                .collect();
            check(&build(&ids, &edges), &format!("random {n}"));
        }
    }

    #[test]
    fn crossing_reduction_untangles() {
        // Declaration order crosses every edge; the sweeps must find the planar ordering.
        let g = build(
            &["r", "a", "b", "c", "z", "y", "x"],
            &[
                ("r", "a"),
                ("r", "b"),
                ("r", "c"),
                ("a", "x"),
                ("b", "y"),
                ("c", "z"),
            ],
        );
        let l = check(&g, "tangle").layout;
        assert!(centre(&l, "x") < centre(&l, "y") && centre(&l, "y") < centre(&l, "z"));
    }

    /// A lane's box as the canvas draws it: its own nodes (not those shared with other lanes),
    /// `LANE_PAD` around them.
    fn lane_box(l: &Layout, g: &Graph, lane: &graph::Lane) -> Option<(f64, f64, f64, f64)> {
        let own: Vec<&NodeBox> = l
            .nodes
            .iter()
            .filter(|b| lane.nodes.contains(&b.id) && g.lanes_of(&b.id).len() == 1)
            .collect();
        if own.is_empty() {
            return None;
        }
        let x0 = own.iter().map(|b| b.x).fold(f64::INFINITY, f64::min) - LANE_PAD;
        let y0 = own.iter().map(|b| b.y).fold(f64::INFINITY, f64::min) - LANE_PAD;
        let x1 = own.iter().map(|b| b.x + b.w).fold(f64::NEG_INFINITY, f64::max) + LANE_PAD;
        let y1 = own.iter().map(|b| b.y + b.h).fold(f64::NEG_INFINITY, f64::max) + LANE_PAD;
        Some((x0, y0, x1, y1))
    }

    #[test]
    fn coyote_lanes_stay_together() {
        let dir = crate::testdata::conformance_dir().join("loki/coyote-0.10.3/assets/agents");
        let mut with_lanes = Vec::new();
        for f in yaml_files(&dir).into_iter().filter(|f| f.ends_with("graph.yaml")) {
            let d = doc::load_path(&f);
            let Some(g) = graph::lower(&d, None).0 else {
                continue;
            };
            let what = f.display().to_string();
            let l = check(&g, &what).layout;
            let pos: HashMap<&str, &NodeBox> = l.nodes.iter().map(|b| (b.id.as_str(), b)).collect();
            let boxes: Vec<_> = g.lanes.iter().map(|lane| lane_box(&l, &g, lane)).collect();
            for (lane, bx) in g.lanes.iter().zip(&boxes) {
                let map = pos[lane.map.as_str()];
                for id in &lane.nodes {
                    assert!(pos[id.as_str()].y > map.y + map.h, "{what}: {id} is not below its map {}", lane.map);
                }
                // What follows the map comes after its whole lane.
                let mix = g.index[&lane.map];
                for e in g.g.edges(mix) {
                    let t = &g.g[petgraph::visit::EdgeRef::target(&e)].id;
                    if e.weight().kind == EdgeKind::MapBranch || lane.nodes.contains(t) {
                        continue;
                    }
                    for id in &lane.nodes {
                        assert!(pos[t.as_str()].y > pos[id.as_str()].y, "{what}: {t} (after {}) is not below {id}", lane.map);
                    }
                }
                let Some((x0, y0, x1, y1)) = *bx else { continue };
                for b in &l.nodes {
                    if lane.nodes.contains(&b.id) && g.lanes_of(&b.id).len() == 1 {
                        continue;
                    }
                    let apart = b.x + b.w <= x0 + 1e-6 || b.x >= x1 - 1e-6 || b.y + b.h <= y0 + 1e-6 || b.y >= y1 - 1e-6;
                    assert!(apart, "{what}: {} lies in the lane box of {}", b.id, lane.map);
                }
                // Long edges go around the box, unless they join two nodes of the lane.
                for (e, (s, t, _)) in g.edges_ordered().iter().enumerate() {
                    if lane.nodes.contains(&g.g[*s].id) && lane.nodes.contains(&g.g[*t].id) {
                        continue;
                    }
                    for &(px, py) in &l.points[e] {
                        let inside = px > x0 && px < x1 && py > y0 && py < y1;
                        assert!(!inside, "{what}: the edge {} -> {} crosses the lane of {}", g.g[*s].id, g.g[*t].id, lane.map);
                    }
                }
            }
            for i in 0..boxes.len() {
                for j in i + 1..boxes.len() {
                    if let (Some(a), Some(b)) = (boxes[i], boxes[j]) {
                        let apart = a.2 <= b.0 || b.2 <= a.0 || a.3 <= b.1 || b.3 <= a.1;
                        assert!(apart, "{what}: the lanes of {} and {} overlap", g.lanes[i].map, g.lanes[j].map);
                    }
                }
            }
            if !g.lanes.is_empty() {
                with_lanes.push(g.agent.clone());
            }
        }
        for a in ["review-gauntlet", "code-reviewer"] {
            assert!(with_lanes.iter().any(|x| x == a), "{a} has lanes: {with_lanes:?}");
        }
    }

    fn yaml_files(root: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                    out.push(p);
                }
            }
        }
        out.sort();
        out
    }

    fn check_files(root: &Path) -> usize {
        let mut graphs = 0;
        for f in yaml_files(root) {
            let d = doc::load_path(&f);
            for agent in graph::agent_names(&d) {
                if let (Some(g), _) = graph::lower(&d, Some(&agent)) {
                    check(&g, &format!("{} ({agent})", f.display()));
                    graphs += 1;
                }
            }
        }
        graphs
    }

    #[test]
    fn agents_and_conformance_corpus() {
        let here = crate::testdata::workspace_root();
        assert!(check_files(&here.join("agents")) >= 2, "agents/ graphs");
        let corpus = crate::testdata::conformance_dir();
        assert!(
            corpus.is_dir(),
            "the conformance corpus is missing at {}",
            corpus.display()
        );
        assert!(check_files(&corpus) >= 20, "conformance graphs");
    }
}
