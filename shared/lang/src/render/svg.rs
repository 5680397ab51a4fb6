//! A `Definition` drawn as SVG, laid out here (no renderer to ship, nothing to run in a
//! browser): compound states as nested boxes, the regions of an orthogonal state side by
//! side in dashed boxes, final states with a double border and their verdict, the initial
//! child marked by a dot, transitions as arrows labelled `Event [guard]`. Every state is a
//! `<g class="state ..." data-path="A.B">`; the paths given as active also carry the class
//! `active`, which the embedded style highlights.
//!
//! The layout is simple on purpose: children flow in rows (about as many columns as rows),
//! arrows are straight between box borders. It reads well for the machines a team writes by
//! hand (tens of states); a machine of hundreds would want a real graph layout.

use std::collections::HashMap;
use std::fmt::Write;

use harel_model::{Definition, NodeId, NodeKind};

use super::guards::{branch_text, guard_text};
use super::{choice_branches, selector_target, start_child, RenderError};

const CHAR_W: f64 = 7.0;
const LEAF_H: f64 = 34.0;
const PAD: f64 = 22.0;
const TITLE_H: f64 = 24.0;
/// Between sibling boxes: the room their arrows' labels get.
const GAP: f64 = 56.0;

#[derive(Clone, Copy, Debug)]
struct Rect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

impl Rect {
    fn center(&self) -> (f64, f64) {
        (self.x + self.w / 2.0, self.y + self.h / 2.0)
    }

    /// Where the segment from the center towards `(tx, ty)` leaves the box.
    fn border_towards(&self, tx: f64, ty: f64) -> (f64, f64) {
        let (cx, cy) = self.center();
        let (dx, dy) = (tx - cx, ty - cy);
        if dx == 0.0 && dy == 0.0 {
            return (cx, cy);
        }
        let sx = if dx == 0.0 {
            f64::INFINITY
        } else {
            (self.w / 2.0) / dx.abs()
        };
        let sy = if dy == 0.0 {
            f64::INFINITY
        } else {
            (self.h / 2.0) / dy.abs()
        };
        let s = sx.min(sy);
        (cx + dx * s, cy + dy * s)
    }
}

/// How a state's children are laid out: in columns, left to right, each stacked top to
/// bottom. An orthogonal state's regions are one column each, side by side; a composite
/// state's children are ranked by how many transitions away from its initial child they are
/// (a child first reached from rank k is in column k + 1), so the machine reads left to right
/// in the order it runs, and most arrows go between neighbouring columns.
struct Arrange {
    columns: Vec<Vec<NodeId>>,
    /// After each column: room for the widest label of an arrow leaving it rightwards (or
    /// arriving from the right).
    hgaps: Vec<f64>,
    vgap: f64,
    /// Columns centred vertically (a composite's flow), or top-aligned (regions).
    center: bool,
}

/// The widest label an arrow between columns gets room for; a longer one may overlap.
const MAX_LABEL_GAP: f64 = 260.0;

/// The child of `container` that is, or holds, `node` (None: `node` is not under it).
fn child_under(defn: &Definition, container: NodeId, node: NodeId) -> Option<NodeId> {
    let mut at = node;
    loop {
        let parent = defn.node(at).parent?;
        if parent == container {
            return Some(at);
        }
        at = parent;
    }
}

fn arrange(defn: &Definition, id: NodeId, edges: &[Edge]) -> Arrange {
    let node = defn.node(id);
    if node.kind == NodeKind::Orthogonal {
        return Arrange {
            columns: node.children.iter().map(|c| vec![*c]).collect(),
            hgaps: vec![PAD / 2.0; node.children.len()],
            vgap: PAD / 2.0,
            center: false,
        };
    }
    // the arrows between children (an arrow from or to a state inside a child counts as the
    // child's), with their label's width
    let mut lifted: Vec<(NodeId, NodeId, f64)> = Vec::new();
    for e in edges {
        if let (Some(a), Some(b)) = (child_under(defn, id, e.from), child_under(defn, id, e.to)) {
            if a != b {
                lifted.push((a, b, e.label_width()));
            }
        }
    }
    let mut rank: HashMap<NodeId, usize> = HashMap::new();
    let mut order: Vec<NodeId> = Vec::new();
    let start = start_child(defn, id).ok().flatten();
    let mut seeds: Vec<NodeId> = start.into_iter().collect();
    seeds.extend(node.children.iter().copied());
    for seed in seeds {
        if rank.contains_key(&seed) {
            continue;
        }
        // a child no earlier one reaches starts a column of its own at 0
        rank.insert(seed, 0);
        order.push(seed);
        let mut i = order.len() - 1;
        while i < order.len() {
            let at = order[i];
            for (a, b, _) in &lifted {
                if *a == at && !rank.contains_key(b) {
                    rank.insert(*b, rank[&at] + 1);
                    order.push(*b);
                }
            }
            i += 1;
        }
    }
    let columns_n = rank.values().max().map_or(0, |m| m + 1);
    let mut columns = vec![Vec::new(); columns_n];
    for c in order {
        columns[rank[&c]].push(c);
    }
    // an arrow's label sits in the gap after the leftmost of its two columns
    let mut hgaps = vec![GAP; columns_n];
    for (a, b, w) in &lifted {
        let (ra, rb) = (rank[a], rank[b]);
        if ra != rb {
            let k = ra.min(rb);
            hgaps[k] = hgaps[k].max((w + 24.0).min(MAX_LABEL_GAP));
        }
    }
    Arrange {
        columns,
        hgaps,
        vgap: GAP,
        center: true,
    }
}

/// Sizes first (bottom-up), then positions (top-down).
fn size(
    defn: &Definition,
    id: NodeId,
    layout: &HashMap<NodeId, Arrange>,
    sizes: &mut HashMap<NodeId, (f64, f64)>,
) -> (f64, f64) {
    let node = defn.node(id);
    let label_w = text_width(&label(defn, id)) + 2.0 * 12.0;
    let result = if node.children.is_empty() {
        let h = if node.outcome.is_some() {
            LEAF_H + 12.0
        } else {
            LEAF_H
        };
        (label_w.max(96.0), h)
    } else {
        let a = &layout[&id];
        let mut w = 0.0;
        let mut h: f64 = 0.0;
        for (i, column) in a.columns.iter().enumerate() {
            let kids: Vec<(f64, f64)> = column
                .iter()
                .map(|c| size(defn, *c, layout, sizes))
                .collect();
            w += kids.iter().map(|k| k.0).fold(0.0, f64::max);
            if i + 1 < a.columns.len() {
                w += a.hgaps[i];
            }
            h = h.max(kids.iter().map(|k| k.1).sum::<f64>() + a.vgap * (kids.len() as f64 - 1.0));
        }
        ((w + 2.0 * PAD).max(label_w), h + TITLE_H + PAD)
    };
    sizes.insert(id, result);
    result
}

fn place(
    defn: &Definition,
    id: NodeId,
    x: f64,
    y: f64,
    layout: &HashMap<NodeId, Arrange>,
    sizes: &HashMap<NodeId, (f64, f64)>,
    rects: &mut HashMap<NodeId, Rect>,
) {
    let (w, h) = sizes[&id];
    rects.insert(id, Rect { x, y, w, h });
    if defn.node(id).children.is_empty() {
        return;
    }
    let a = &layout[&id];
    let inner_h = h - TITLE_H - PAD;
    let mut cx = x + PAD;
    for (i, column) in a.columns.iter().enumerate() {
        let col_w = column.iter().map(|c| sizes[c].0).fold(0.0, f64::max);
        let col_h =
            column.iter().map(|c| sizes[c].1).sum::<f64>() + a.vgap * (column.len() as f64 - 1.0);
        let mut cy = y + TITLE_H;
        if a.center {
            cy += (inner_h - col_h) / 2.0;
        }
        for child in column {
            let (cw, ch) = sizes[child];
            // centred in its column, so arrows along a row stay straight
            let dx = if a.center { (col_w - cw) / 2.0 } else { 0.0 };
            place(defn, *child, cx + dx, cy, layout, sizes, rects);
            cy += ch + a.vgap;
        }
        cx += col_w + a.hgaps[i];
    }
}

fn text_width(s: &str) -> f64 {
    s.chars().count() as f64 * CHAR_W
}

fn label(defn: &Definition, id: NodeId) -> String {
    let node = defn.node(id);
    if id == defn.root {
        defn.id.clone()
    } else {
        node.name.clone()
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One arrow: from, to, and the label of each transition it stands for (several
/// transitions between the same two states are one arrow, their labels stacked).
struct Edge {
    from: NodeId,
    to: NodeId,
    labels: Vec<String>,
}

const LABEL_CHAR_W: f64 = 6.2;
const LABEL_LINE_H: f64 = 14.0;

impl Edge {
    fn label_width(&self) -> f64 {
        self.labels
            .iter()
            .map(|l| l.chars().count() as f64 * LABEL_CHAR_W + 6.0)
            .fold(0.0, f64::max)
    }
}

/// The arrows, one per (from, to), in the order their first transition is declared.
fn edges(defn: &Definition) -> Result<Vec<Edge>, RenderError> {
    let mut merged: Vec<Edge> = Vec::new();
    for e in transitions(defn)? {
        match merged.iter_mut().find(|m| m.from == e.from && m.to == e.to) {
            Some(m) => {
                if !e.labels[0].is_empty() && !m.labels.contains(&e.labels[0]) {
                    m.labels.retain(|l| !l.is_empty());
                    m.labels.extend(e.labels);
                }
            }
            None => merged.push(e),
        }
    }
    Ok(merged)
}

fn transitions(defn: &Definition) -> Result<Vec<Edge>, RenderError> {
    let mut out = Vec::new();
    for (i, node) in defn.nodes.iter().enumerate() {
        let comp = NodeId(i as u32);
        for t in &node.transitions {
            let event = t
                .event_filter
                .as_ref()
                .map(|ef| {
                    let guard = guard_text(ef)
                        .map(|g| format!(" [{g}]"))
                        .unwrap_or_default();
                    format!("{}{guard}", ef.kind)
                })
                .unwrap_or_default();
            if let Some(target) = t.target {
                out.push(Edge {
                    from: t.source,
                    to: target,
                    labels: vec![event],
                });
            } else if let Some(choice) = &t.choice {
                for (guard, target, _) in choice_branches(choice) {
                    out.push(Edge {
                        from: t.source,
                        to: target,
                        labels: vec![format!("{event} [{}]", branch_text(guard))
                            .trim()
                            .to_string()],
                    });
                }
                if let Some(target) = choice.default {
                    out.push(Edge {
                        from: t.source,
                        to: target,
                        labels: vec![format!("{event} [else]").trim().to_string()],
                    });
                }
            } else if let Some(selector) = &t.selector {
                let function = super::short_name(&selector.action.function);
                let mut targets: Vec<(&str, &str)> = selector
                    .mapper
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                if let Some(d) = &selector.default {
                    targets.push(("else", d.as_str()));
                }
                for (value, name) in targets {
                    out.push(Edge {
                        from: t.source,
                        to: selector_target(defn, comp, name)?,
                        labels: vec![format!("{event} [{function} = {value}]").trim().to_string()],
                    });
                }
            }
        }
    }
    Ok(out)
}

/// The machine drawn, `active` state paths (full paths, `A.B`) highlighted.
pub fn render(defn: &Definition, active: &[String]) -> Result<String, RenderError> {
    let edges = edges(defn)?;
    let layout: HashMap<NodeId, Arrange> = (0..defn.nodes.len())
        .map(|i| NodeId(i as u32))
        .filter(|id| !defn.node(*id).children.is_empty())
        .map(|id| (id, arrange(defn, id, &edges)))
        .collect();
    let mut sizes = HashMap::new();
    let (w, h) = size(defn, defn.root, &layout, &mut sizes);
    let mut rects = HashMap::new();
    let margin = 8.0;
    place(defn, defn.root, margin, margin, &layout, &sizes, &mut rects);
    let (width, height) = (w + 2.0 * margin, h + 2.0 * margin);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="statechart" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    svg.push_str(concat!(
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#555\"/></marker></defs>",
        "<style>",
        ".state>rect{fill:#fff;stroke:#667;stroke-width:1.2}",
        ".state.composite>rect,.state.orthogonal>rect{fill:#f6f8fb}",
        ".state.region>rect{fill:none;stroke-dasharray:5 4}",
        ".state.root>rect{fill:#fbfcfe;stroke:#99a}",
        ".state.final>rect.inner{fill:none}",
        ".state.active>rect{stroke:#e65100;stroke-width:3}",
        ".state.leaf.active>rect,.state.final.active>rect.outer{fill:#ffe082}",
        ".state .title{font-weight:bold}",
        ".state .verdict{font-size:10px;fill:#555}",
        ".edge{stroke:#555;fill:none;stroke-width:1.2}",
        ".edge-label{font-size:11px;fill:#234}",
        ".edge-label-bg{fill:#fff;opacity:.85}",
        ".initial{fill:#333}",
        "</style>"
    ));
    draw_state(defn, defn.root, &rects, active, &mut svg)?;
    // the arrows over the boxes, then every label over every arrow
    let mut labels = String::new();
    for edge in &edges {
        let both_ways = edges.iter().any(|e| e.from == edge.to && e.to == edge.from);
        draw_edge(defn, edge, both_ways, &rects, &mut svg, &mut labels);
    }
    svg.push_str(&labels);
    svg.push_str("</svg>");
    Ok(svg)
}

fn draw_state(
    defn: &Definition,
    id: NodeId,
    rects: &HashMap<NodeId, Rect>,
    active: &[String],
    svg: &mut String,
) -> Result<(), RenderError> {
    let node = defn.node(id);
    let r = rects[&id];
    let parent_kind = node.parent.map(|p| defn.node(p).kind);
    let mut classes = vec!["state"];
    classes.push(if id == defn.root {
        "root"
    } else if parent_kind == Some(NodeKind::Orthogonal) {
        "region"
    } else {
        match node.kind {
            NodeKind::Leaf => "leaf",
            NodeKind::Orthogonal => "orthogonal",
            NodeKind::Composite | NodeKind::Parallel => "composite",
        }
    });
    if node.outcome.is_some() {
        classes.push("final");
    }
    let path = node.full_path.to_string();
    if id != defn.root && active.contains(&path) {
        classes.push("active");
    }
    let _ = write!(
        svg,
        r#"<g class="{}" data-path="{}"><title>{}</title>"#,
        classes.join(" "),
        escape(&path),
        escape(if path.is_empty() { &defn.id } else { &path })
    );
    let (rx, outer) = if node.children.is_empty() {
        (10.0, " class=\"outer\"")
    } else {
        (6.0, "")
    };
    let _ = write!(
        svg,
        r#"<rect{outer} x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="{rx}"/>"#,
        r.x, r.y, r.w, r.h
    );
    if let Some(outcome) = &node.outcome {
        let _ = write!(
            svg,
            r#"<rect class="inner" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="7"/>"#,
            r.x + 4.0,
            r.y + 4.0,
            r.w - 8.0,
            r.h - 8.0
        );
        let _ = write!(
            svg,
            r#"<text class="verdict" x="{:.1}" y="{:.1}" text-anchor="middle">final: {}</text>"#,
            r.x + r.w / 2.0,
            r.y + r.h - 11.0,
            escape(outcome)
        );
    }
    let name = escape(&label(defn, id));
    if node.children.is_empty() {
        let ty = if node.outcome.is_some() {
            r.y + 20.0
        } else {
            r.y + r.h / 2.0 + 4.0
        };
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{ty:.1}" text-anchor="middle">{name}</text>"#,
            r.x + r.w / 2.0
        );
    } else {
        let kind = if node.kind == NodeKind::Orthogonal {
            " (orthogonal)"
        } else {
            ""
        };
        let _ = write!(
            svg,
            r#"<text class="title" x="{:.1}" y="{:.1}">{name}{kind}</text>"#,
            r.x + 10.0,
            r.y + 16.0
        );
    }
    svg.push_str("</g>");
    if let Some(start) = start_child(defn, id)? {
        let s = rects[&start];
        let (x, y) = (s.x - 14.0, s.y + s.h / 2.0);
        let _ = write!(
            svg,
            r#"<circle class="initial" cx="{x:.1}" cy="{y:.1}" r="4"/><line class="edge" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" marker-end="url(#arrow)"/>"#,
            x + 4.0,
            s.x
        );
    }
    for child in &node.children {
        draw_state(defn, *child, rects, active, svg)?;
    }
    Ok(())
}

/// Where the segment from `p` (inside `r`) towards `q` leaves `r`, as a fraction of the way.
fn leaves(r: &Rect, p: (f64, f64), q: (f64, f64)) -> f64 {
    let (dx, dy) = (q.0 - p.0, q.1 - p.1);
    let mut t: f64 = 1.0;
    if dx > 0.0 {
        t = t.min((r.x + r.w - p.0) / dx);
    } else if dx < 0.0 {
        t = t.min((r.x - p.0) / dx);
    }
    if dy > 0.0 {
        t = t.min((r.y + r.h - p.1) / dy);
    } else if dy < 0.0 {
        t = t.min((r.y - p.1) / dy);
    }
    t.clamp(0.0, 1.0)
}

/// One arrow; its label goes to `labels` (drawn after every arrow, so none crosses one).
/// An arrow with one back (`both_ways`) is drawn a little to its left, so the two do not
/// cover each other; its label is placed where the arrow crosses the free space between the
/// two states' outermost distinct boxes, away from other states.
fn draw_edge(
    defn: &Definition,
    edge: &Edge,
    both_ways: bool,
    rects: &HashMap<NodeId, Rect>,
    svg: &mut String,
    labels: &mut String,
) {
    let (a, b) = (rects[&edge.from], rects[&edge.to]);
    let (lx, ly);
    if edge.from == edge.to {
        // a loop on the box's right-hand top corner
        let (x, y) = (a.x + a.w, a.y + a.h / 3.0);
        let _ = write!(
            svg,
            r#"<path class="edge" d="M{:.1},{:.1} C{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" marker-end="url(#arrow)"/>"#,
            x - 12.0,
            a.y,
            x + 26.0,
            a.y - 26.0,
            x + 26.0,
            y + 10.0,
            x,
            y
        );
        lx = x + 10.0;
        ly = a.y - 20.0;
    } else {
        let (bx, by) = b.center();
        let (ax, ay) = a.center();
        let (mut x1, mut y1) = a.border_towards(bx, by);
        let (mut x2, mut y2) = b.border_towards(ax, ay);
        let len = ((x2 - x1).powi(2) + (y2 - y1).powi(2)).sqrt().max(1.0);
        // the left of the arrow's direction
        let (nx, ny) = ((y2 - y1) / len, -(x2 - x1) / len);
        let shift = if both_ways { 6.0 } else { 0.0 };
        x1 += nx * shift;
        y1 += ny * shift;
        x2 += nx * shift;
        y2 += ny * shift;
        // a straight arrow that would cross another state's box bends around it: the first
        // bulge to one side or the other that clears every box
        let obstacles = obstacles(defn, edge.from, edge.to, rects);
        let (p, q) = ((x1, y1), (x2, y2));
        if crosses(&obstacles, |t| (x1 + (x2 - x1) * t, y1 + (y2 - y1) * t)) {
            for d in [40.0, -40.0, 80.0, -80.0, 120.0, -120.0, 160.0, -160.0] {
                let curve = Bulge::new(p, q, (nx, ny), d);
                if !crosses(&obstacles, |t| curve.at(t)) {
                    let _ = write!(
                        svg,
                        r#"<path class="edge" d="M{x1:.1},{y1:.1} C{:.1},{:.1} {:.1},{:.1} {x2:.1},{y2:.1}" marker-end="url(#arrow)"/>"#,
                        curve.c1.0, curve.c1.1, curve.c2.0, curve.c2.1
                    );
                    let (mx, my) = curve.at(0.5);
                    edge_label(edge, mx, my, labels);
                    return;
                }
            }
        }
        let _ = write!(
            svg,
            r#"<line class="edge" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" marker-end="url(#arrow)"/>"#
        );
        // the outermost boxes that hold one end and not the other: the label goes between
        let common = common_ancestor(defn, edge.from, edge.to);
        let outer = |n: NodeId| {
            common
                .and_then(|c| child_under(defn, c, n))
                .map(|o| rects[&o])
                .unwrap_or(rects[&n])
        };
        let (oa, ob) = (outer(edge.from), outer(edge.to));
        let t1 = if edge_contains(&oa, &a) {
            leaves(&oa, p, q)
        } else {
            0.0
        };
        let t2 = if edge_contains(&ob, &b) {
            1.0 - leaves(&ob, q, p)
        } else {
            1.0
        };
        let (t1, t2) = if t2 > t1 { (t1, t2) } else { (0.0, 1.0) };
        let t = (t1 + t2) / 2.0;
        let extra = if both_ways { 10.0 } else { 0.0 };
        lx = x1 + (x2 - x1) * t + nx * extra;
        ly = y1 + (y2 - y1) * t + ny * extra;
    }
    edge_label(edge, lx, ly, labels);
}

/// The boxes an arrow between `from` and `to` must not cross: every state but the two, their
/// ancestors (which hold them) and their descendants (which they hold).
fn obstacles(
    defn: &Definition,
    from: NodeId,
    to: NodeId,
    rects: &HashMap<NodeId, Rect>,
) -> Vec<Rect> {
    let related = |n: NodeId| {
        let under = |a: NodeId, b: NodeId| {
            let mut at = Some(b);
            while let Some(x) = at {
                if x == a {
                    return true;
                }
                at = defn.node(x).parent;
            }
            false
        };
        under(n, from) || under(n, to) || under(from, n) || under(to, n)
    };
    rects
        .iter()
        .filter(|(n, _)| !related(**n))
        .map(|(_, r)| *r)
        .collect()
}

/// Whether the path `at(t)`, t from 0 to 1, passes inside one of `boxes` (sampled every
/// 1/48 of the way: finer than the smallest box along any arrow this draws).
fn crosses(boxes: &[Rect], at: impl Fn(f64) -> (f64, f64)) -> bool {
    (1..48).any(|i| {
        let (x, y) = at(i as f64 / 48.0);
        boxes
            .iter()
            .any(|r| x > r.x + 2.0 && x < r.x + r.w - 2.0 && y > r.y + 2.0 && y < r.y + r.h - 2.0)
    })
}

/// A cubic curve from `p` to `q` whose middle lies `d` to the side `n` of the straight line.
struct Bulge {
    p: (f64, f64),
    c1: (f64, f64),
    c2: (f64, f64),
    q: (f64, f64),
}

impl Bulge {
    fn new(p: (f64, f64), q: (f64, f64), n: (f64, f64), d: f64) -> Bulge {
        // control points a quarter and three quarters of the way, pushed out by d / 0.75:
        // the curve's middle is then d out
        let k = d / 0.75;
        let along = |f: f64| {
            (
                p.0 + (q.0 - p.0) * f + n.0 * k,
                p.1 + (q.1 - p.1) * f + n.1 * k,
            )
        };
        Bulge {
            p,
            c1: along(0.25),
            c2: along(0.75),
            q,
        }
    }

    fn at(&self, t: f64) -> (f64, f64) {
        let u = 1.0 - t;
        let (a, b, c, d) = (u * u * u, 3.0 * u * u * t, 3.0 * u * t * t, t * t * t);
        (
            a * self.p.0 + b * self.c1.0 + c * self.c2.0 + d * self.q.0,
            a * self.p.1 + b * self.c1.1 + c * self.c2.1 + d * self.q.1,
        )
    }
}

/// An arrow's label, its lines stacked, centred on (lx, ly), over a white background.
fn edge_label(edge: &Edge, lx: f64, ly: f64, labels: &mut String) {
    let lines: Vec<&String> = edge.labels.iter().filter(|l| !l.is_empty()).collect();
    if lines.is_empty() {
        return;
    }
    let w = edge.label_width();
    let h = LABEL_LINE_H * lines.len() as f64;
    let top = ly - h / 2.0;
    let _ = write!(
        labels,
        r#"<rect class="edge-label-bg" x="{:.1}" y="{top:.1}" width="{w:.1}" height="{h:.1}" rx="3"/>"#,
        lx - w / 2.0,
    );
    for (i, line) in lines.iter().enumerate() {
        let _ = write!(
            labels,
            r#"<text class="edge-label" x="{lx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            top + LABEL_LINE_H * (i as f64 + 1.0) - 3.0,
            escape(line)
        );
    }
}

/// `outer` holds `inner` (or is it).
fn edge_contains(outer: &Rect, inner: &Rect) -> bool {
    outer.x <= inner.x + 0.01
        && outer.y <= inner.y + 0.01
        && outer.x + outer.w >= inner.x + inner.w - 0.01
        && outer.y + outer.h >= inner.y + inner.h - 0.01
}

/// The innermost state holding both `a` and `b` (strictly: neither is it).
fn common_ancestor(defn: &Definition, a: NodeId, b: NodeId) -> Option<NodeId> {
    let mut chain = Vec::new();
    let mut at = defn.node(a).parent;
    while let Some(p) = at {
        chain.push(p);
        at = defn.node(p).parent;
    }
    let mut at = defn.node(b).parent;
    while let Some(p) = at {
        if chain.contains(&p) {
            return Some(p);
        }
        at = defn.node(p).parent;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r#"
event Go { n: int? }
event Stop {}
machine M {
  initial A
  state A {
    initial B
    state B {}
    state C {}
    from B to C on Go where n > 2
  }
  orthogonal P {
    state R1 {
      initial X
      state X {}
      state Y {}
      from X to Y on Go
    }
    state R2 {
      initial U
      state U {}
    }
  }
  final D success
  from A to P on Stop
  from P to D on Stop
}
"#;

    fn machine() -> Definition {
        crate::load_str(SRC, None, "m.stm").expect("loads")
    }

    #[test]
    fn active_states_carry_the_class_and_the_rest_do_not() {
        let svg = render(&machine(), &["A".into(), "A.B".into()]).expect("drawn");
        assert!(
            svg.contains(r#"<g class="state composite active" data-path="A">"#),
            "{svg}"
        );
        assert!(svg.contains(r#"<g class="state leaf active" data-path="A.B">"#));
        assert!(svg.contains(r#"<g class="state leaf" data-path="A.C">"#));
        assert_eq!(svg.matches("active\"").count(), 2);
    }

    #[test]
    fn regions_finals_and_labels_are_drawn() {
        let svg = render(&machine(), &[]).expect("drawn");
        assert!(
            svg.contains(r#"class="state orthogonal" data-path="P""#),
            "{svg}"
        );
        assert!(svg.contains(r#"class="state region" data-path="P.R1""#));
        assert!(svg.contains(r#"class="state leaf final" data-path="D""#));
        assert!(svg.contains("final: success"));
        assert!(svg.contains(">Go [n &gt; 2]</text>"), "{svg}");
        assert!(svg.contains(">Stop</text>"));
        // regions side by side: R2 starts right of R1 at the same height
        let y_of = |path: &str| {
            let at = svg.find(&format!("data-path=\"{path}\"")).expect("drawn");
            let rect = &svg[at..];
            let x: f64 = rect
                .split("x=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let y: f64 = rect
                .split("y=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            (x, y)
        };
        let (x1, y1) = y_of("P.R1");
        let (x2, y2) = y_of("P.R2");
        assert_eq!(y1, y2);
        assert!(x2 > x1);
    }

    /// The (x, y) of the box drawn for `path`.
    fn corner(svg: &str, path: &str) -> (f64, f64) {
        let at = svg
            .find(&format!("data-path=\"{path}\""))
            .unwrap_or_else(|| panic!("{path} drawn"));
        let num = |key: &str| -> f64 {
            svg[at..]
                .split(key)
                .nth(1)
                .and_then(|r| r.split('"').next())
                .and_then(|v| v.parse().ok())
                .expect("a number")
        };
        (num(" x=\""), num(" y=\""))
    }

    const FLOW: &str = r#"
event Go {}
event Skip {}
event Stop {}
machine F {
  initial Start
  state Start {}
  state Review {}
  state Waiting {}
  final Done success
  from Start to Review on Go
  from Start to Waiting on Skip
  from Start to Done on Stop
  from Review to Waiting on Go
  from Review to Done on Stop
}
"#;

    #[test]
    fn children_run_left_to_right_and_an_arrow_bends_around_a_box_in_its_way() {
        let defn = crate::load_str(FLOW, None, "f.stm").expect("loads");
        let svg = render(&defn, &[]).expect("drawn");
        // Start first; the three it leads to in the next column, stacked
        let (sx, _) = corner(&svg, "Start");
        let (rx, ry) = corner(&svg, "Review");
        let (wx, wy) = corner(&svg, "Waiting");
        let (dx, dy) = corner(&svg, "Done");
        assert!(sx < rx, "{svg}");
        assert!((rx - wx).abs() < 20.0 && (wx - dx).abs() < 20.0, "{svg}");
        assert!(ry < wy && wy < dy, "{svg}");
        // Review -> Done would cross Waiting: the one curved arrow (no loops here)
        assert_eq!(svg.matches("<path class=\"edge\"").count(), 1, "{svg}");
        assert_eq!(svg.matches("<line class=\"edge\"").count(), 4 + 1, "{svg}");
        // every label is drawn after every arrow, so none is crossed by one
        let last_arrow = svg.rfind("class=\"edge\"").expect("arrows");
        let first_label = svg.find("class=\"edge-label-bg\"").expect("labels");
        assert!(last_arrow < first_label);
    }
}
