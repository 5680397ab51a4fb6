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

/// Sizes first (bottom-up), then positions (top-down).
fn size(defn: &Definition, id: NodeId, sizes: &mut HashMap<NodeId, (f64, f64)>) -> (f64, f64) {
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
        let kids: Vec<(f64, f64)> = node
            .children
            .iter()
            .map(|c| size(defn, *c, sizes))
            .collect();
        let rows = rows_of(node.kind, kids.len());
        let gap = gap_of(node.kind);
        let mut w: f64 = 0.0;
        let mut h = 0.0;
        for row in rows {
            let row_w: f64 =
                row.iter().map(|i| kids[*i].0).sum::<f64>() + gap * (row.len() as f64 - 1.0);
            let row_h = row.iter().map(|i| kids[*i].1).fold(0.0, f64::max);
            w = w.max(row_w);
            h += row_h + gap;
        }
        h -= gap;
        ((w + 2.0 * PAD).max(label_w), h + TITLE_H + PAD)
    };
    sizes.insert(id, result);
    result
}

fn gap_of(kind: NodeKind) -> f64 {
    if kind == NodeKind::Orthogonal {
        PAD / 2.0
    } else {
        GAP
    }
}

/// The children's indices per row: an orthogonal state's regions in one row, others about
/// as many columns as rows.
fn rows_of(kind: NodeKind, n: usize) -> Vec<Vec<usize>> {
    let cols = if kind == NodeKind::Orthogonal {
        n.max(1)
    } else {
        (n as f64).sqrt().ceil().max(1.0) as usize
    };
    (0..n)
        .collect::<Vec<_>>()
        .chunks(cols)
        .map(<[usize]>::to_vec)
        .collect()
}

fn place(
    defn: &Definition,
    id: NodeId,
    x: f64,
    y: f64,
    sizes: &HashMap<NodeId, (f64, f64)>,
    rects: &mut HashMap<NodeId, Rect>,
) {
    let (w, h) = sizes[&id];
    rects.insert(id, Rect { x, y, w, h });
    let node = defn.node(id);
    if node.children.is_empty() {
        return;
    }
    let gap = gap_of(node.kind);
    let mut cy = y + TITLE_H;
    for row in rows_of(node.kind, node.children.len()) {
        let mut cx = x + PAD;
        let mut row_h: f64 = 0.0;
        for i in row {
            let child = node.children[i];
            let (cw, ch) = sizes[&child];
            place(defn, child, cx, cy, sizes, rects);
            cx += cw + gap;
            row_h = row_h.max(ch);
        }
        cy += row_h + gap;
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

/// One arrow: from, to, label.
struct Edge {
    from: NodeId,
    to: NodeId,
    label: String,
}

fn edges(defn: &Definition) -> Result<Vec<Edge>, RenderError> {
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
                    label: event,
                });
            } else if let Some(choice) = &t.choice {
                for (guard, target, _) in choice_branches(choice) {
                    out.push(Edge {
                        from: t.source,
                        to: target,
                        label: format!("{event} [{}]", branch_text(guard))
                            .trim()
                            .to_string(),
                    });
                }
                if let Some(target) = choice.default {
                    out.push(Edge {
                        from: t.source,
                        to: target,
                        label: format!("{event} [else]").trim().to_string(),
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
                        label: format!("{event} [{function} = {value}]").trim().to_string(),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// The machine drawn, `active` state paths (full paths, `A.B`) highlighted.
pub fn render(defn: &Definition, active: &[String]) -> Result<String, RenderError> {
    let mut sizes = HashMap::new();
    let (w, h) = size(defn, defn.root, &mut sizes);
    let mut rects = HashMap::new();
    let margin = 8.0;
    place(defn, defn.root, margin, margin, &sizes, &mut rects);
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
    for edge in edges(defn)? {
        draw_edge(&edge, &rects, &mut svg);
    }
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

fn draw_edge(edge: &Edge, rects: &HashMap<NodeId, Rect>, svg: &mut String) {
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
        lx = x + 4.0;
        ly = a.y - 16.0;
    } else {
        let (bx, by) = b.center();
        let (ax, ay) = a.center();
        let (x1, y1) = a.border_towards(bx, by);
        let (x2, y2) = b.border_towards(ax, ay);
        let _ = write!(
            svg,
            r#"<line class="edge" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" marker-end="url(#arrow)"/>"#
        );
        lx = (x1 + x2) / 2.0;
        ly = (y1 + y2) / 2.0;
    }
    if edge.label.is_empty() {
        return;
    }
    let w = edge.label.chars().count() as f64 * 6.2 + 6.0;
    let _ = write!(
        svg,
        r#"<rect class="edge-label-bg" x="{:.1}" y="{:.1}" width="{w:.1}" height="14" rx="3"/><text class="edge-label" x="{lx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        lx - w / 2.0,
        ly - 10.0,
        ly + 1.0,
        escape(&edge.label)
    );
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
}
