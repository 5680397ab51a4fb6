//! The monitor's screens (harel's `tui/screens.py`): the state they show, what each key
//! does to it, and how it is drawn. Pure: the loop in `mod.rs` does the IO an [`Action`]
//! asks for, so the keys and the drawing are tested on ratatui's test backend.

use ratatui::crossterm::event::KeyCode;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;

use harel_model::{ExecutionSummary, Status};

use super::model::{Detail, Mark, TreeNode};
use crate::commands::clock::utc;

/// A control-plane command the detail screen sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Suspend,
    Resume,
    Cancel,
    Terminate,
}

impl Control {
    pub fn name(self) -> &'static str {
        match self {
            Control::Suspend => "suspend",
            Control::Resume => "resume",
            Control::Cancel => "cancel",
            Control::Terminate => "terminate",
        }
    }
}

/// What the loop must do after a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Nothing,
    Quit,
    /// Read the store again (the list, or the open execution).
    Refresh,
    Control(Control, String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Screen {
    List,
    Detail(String),
}

#[derive(Debug)]
pub struct App {
    pub screen: Screen,
    /// The listed page, as the store gave it.
    pub items: Vec<ExecutionSummary>,
    /// The row selected among the filtered items.
    pub selected: usize,
    /// A substring of the id, machine or status (`/`), applied to the listed page.
    pub filter: String,
    /// Typing the filter: keys go to it.
    pub typing: bool,
    /// Auto-refresh paused (`p`).
    pub paused: bool,
    pub detail: Option<Detail>,
    /// A destructive command waiting for `y`.
    pub confirm: Option<Control>,
    /// The last command's result or the last store error, on the status line.
    pub message: Option<String>,
}

impl App {
    pub fn new() -> App {
        App {
            screen: Screen::List,
            items: Vec::new(),
            selected: 0,
            filter: String::new(),
            typing: false,
            paused: false,
            detail: None,
            confirm: None,
            message: None,
        }
    }

    /// The listed executions the filter keeps.
    pub fn visible(&self) -> Vec<&ExecutionSummary> {
        let needle = self.filter.to_lowercase();
        self.items
            .iter()
            .filter(|s| {
                needle.is_empty()
                    || s.id.to_lowercase().contains(&needle)
                    || s.definition_id.to_lowercase().contains(&needle)
                    || s.status.as_str().to_lowercase().contains(&needle)
            })
            .collect()
    }

    /// A new page from the store: the selection stays in range.
    pub fn set_items(&mut self, items: Vec<ExecutionSummary>) {
        self.items = items;
        let n = self.visible().len();
        self.selected = self.selected.min(n.saturating_sub(1));
    }

    pub fn on_key(&mut self, key: KeyCode) -> Action {
        if let Some(command) = self.confirm {
            self.confirm = None;
            return match (key, &self.screen) {
                (KeyCode::Char('y'), Screen::Detail(id)) => Action::Control(command, id.clone()),
                _ => Action::Nothing,
            };
        }
        if self.typing {
            match key {
                KeyCode::Char(c) => self.filter.push(c),
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Esc => {
                    self.filter.clear();
                    self.typing = false;
                }
                KeyCode::Enter => self.typing = false,
                _ => {}
            }
            self.selected = 0;
            return Action::Nothing;
        }
        match (&self.screen, key) {
            (_, KeyCode::Char('q')) => Action::Quit,
            (_, KeyCode::Char('r')) => Action::Refresh,
            (Screen::List, KeyCode::Down | KeyCode::Char('j')) => {
                let n = self.visible().len();
                self.selected = (self.selected + 1).min(n.saturating_sub(1));
                Action::Nothing
            }
            (Screen::List, KeyCode::Up | KeyCode::Char('k')) => {
                self.selected = self.selected.saturating_sub(1);
                Action::Nothing
            }
            (Screen::List, KeyCode::Enter) => match self.visible().get(self.selected) {
                Some(s) => {
                    self.screen = Screen::Detail(s.id.clone());
                    self.detail = None;
                    Action::Refresh
                }
                None => Action::Nothing,
            },
            (Screen::List, KeyCode::Char('/')) => {
                self.typing = true;
                Action::Nothing
            }
            (Screen::List, KeyCode::Esc) => {
                self.filter.clear();
                Action::Nothing
            }
            (Screen::List, KeyCode::Char('p')) => {
                self.paused = !self.paused;
                Action::Nothing
            }
            (Screen::Detail(_), KeyCode::Esc | KeyCode::Char('h')) => {
                self.screen = Screen::List;
                self.detail = None;
                Action::Refresh
            }
            (Screen::Detail(id), KeyCode::Char('s')) => {
                Action::Control(Control::Suspend, id.clone())
            }
            (Screen::Detail(id), KeyCode::Char('R')) => {
                Action::Control(Control::Resume, id.clone())
            }
            (Screen::Detail(_), KeyCode::Char('c')) => {
                self.confirm = Some(Control::Cancel);
                Action::Nothing
            }
            (Screen::Detail(_), KeyCode::Char('t')) => {
                self.confirm = Some(Control::Terminate);
                Action::Nothing
            }
            _ => Action::Nothing,
        }
    }
}

impl Default for App {
    fn default() -> Self {
        App::new()
    }
}

/// harel's glyph and colour for each status.
fn status_style(status: Status) -> (&'static str, Style) {
    let (glyph, color) = match status {
        Status::Pending => ("○", Color::Gray),
        Status::Running => ("●", Color::Green),
        Status::Suspended => ("⏸", Color::Yellow),
        Status::Cancelling => ("◐", Color::Yellow),
        Status::Cancelled => ("⊘", Color::Red),
        Status::Done => ("✓", Color::Cyan),
        Status::Failed => ("✗", Color::Red),
    };
    (glyph, Style::default().fg(color))
}

fn status_span(status: Status) -> Span<'static> {
    let (glyph, style) = status_style(status);
    Span::styled(format!("{glyph} {status}"), style)
}

pub fn draw(frame: &mut Frame, app: &App) {
    let [body, footer] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(frame.area());
    match &app.screen {
        Screen::List => draw_list(frame, body, app),
        Screen::Detail(id) => draw_detail(frame, body, app, id),
    }
    let keys = match (&app.screen, app.typing) {
        (_, true) => format!("filter: {}▏  enter done  esc clear", app.filter),
        (Screen::List, false) => "enter open  / filter  r refresh  p pause  q quit".to_string(),
        (Screen::Detail(_), false) => {
            "esc back  r refresh  s suspend  R resume  c cancel  t terminate  q quit".to_string()
        }
    };
    let line = match &app.message {
        Some(m) => Line::from(vec![
            Span::styled(m.clone(), Style::default().add_modifier(Modifier::BOLD)),
            Span::raw("  ·  "),
            Span::raw(keys),
        ]),
        None => Line::from(keys),
    };
    frame.render_widget(Paragraph::new(line), footer);
    if let Some(command) = app.confirm {
        let area = centered(frame.area(), 50, 5);
        let id = match &app.screen {
            Screen::Detail(id) => id.as_str(),
            Screen::List => "",
        };
        let forceful = if command == Control::Terminate {
            " (forceful)"
        } else {
            ""
        };
        frame.render_widget(Clear, area);
        frame.render_widget(
            Paragraph::new(format!(
                "{} {id}{forceful}?\n\ny yes   n no",
                command.name()
            ))
            .wrap(Wrap { trim: true })
            .block(Block::default().borders(Borders::ALL).title(" confirm ")),
            area,
        );
    }
}

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

fn draw_list(frame: &mut Frame, area: Rect, app: &App) {
    let visible = app.visible();
    let rows = visible.iter().map(|s| {
        Row::new(vec![
            Cell::from(s.id.clone()),
            Cell::from(s.definition_id.clone()),
            Cell::from(status_span(s.status)),
            Cell::from(s.active_path.clone().unwrap_or_else(|| "—".into())),
            Cell::from(s.outcome.clone().unwrap_or_else(|| "—".into())),
            Cell::from(s.finished_at.map(utc).unwrap_or_else(|| "—".into())),
        ])
    });
    let widths = [
        Constraint::Percentage(26),
        Constraint::Percentage(14),
        Constraint::Length(13),
        Constraint::Percentage(26),
        Constraint::Percentage(10),
        Constraint::Length(20),
    ];
    let paused = if app.paused { ", paused" } else { "" };
    let filter = if app.filter.is_empty() {
        String::new()
    } else {
        format!(", filter {:?}", app.filter)
    };
    let title = format!(
        " harel monitor: {} executions{filter}{paused} ",
        visible.len()
    );
    let table = Table::new(rows, widths)
        .header(
            Row::new(["ID", "MACHINE", "STATUS", "ACTIVE", "OUTCOME", "FINISHED"])
                .style(Style::default().add_modifier(Modifier::BOLD)),
        )
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .block(Block::default().borders(Borders::ALL).title(title));
    let mut state =
        TableState::default().with_selected((!visible.is_empty()).then_some(app.selected));
    frame.render_stateful_widget(table, area, &mut state);
}

/// The statechart as indented lines, the active leaf and its ancestors marked.
fn tree_lines(node: &TreeNode, depth: usize, out: &mut Vec<Line<'static>>) {
    let name = if node.name.is_empty() {
        "(root)"
    } else {
        node.name.as_str()
    };
    let (marker, style) = match node.mark {
        Mark::Active => (
            "▶ ",
            Style::default()
                .fg(Color::Green)
                .add_modifier(Modifier::BOLD),
        ),
        Mark::OnActivePath => ("▸ ", Style::default().fg(Color::Green)),
        Mark::Inactive => ("  ", Style::default()),
    };
    let mut spans = vec![
        Span::raw("  ".repeat(depth)),
        Span::styled(format!("{marker}{name}"), style),
    ];
    if let Some(r) = &node.region {
        let what = if r.submachine { "invoke" } else { "region" };
        let state = match (&r.outcome, r.finished) {
            (Some(o), _) => format!("finished: {o}"),
            (None, true) => "finished".into(),
            (None, false) => "running".into(),
        };
        spans.push(Span::styled(
            format!("  [{what} {}: {state}]", r.child_id),
            Style::default().fg(Color::DarkGray),
        ));
    }
    out.push(Line::from(spans));
    for c in &node.children {
        tree_lines(c, depth + 1, out);
    }
}

fn draw_detail(frame: &mut Frame, area: Rect, app: &App, id: &str) {
    let Some(detail) = &app.detail else {
        frame.render_widget(
            Paragraph::new(format!("loading {id}…"))
                .block(Block::default().borders(Borders::ALL).title(" execution ")),
            area,
        );
        return;
    };
    let exe = &detail.execution;
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(42), Constraint::Percentage(58)]).areas(area);

    let mut lines = Vec::new();
    match &detail.tree {
        Some(tree) => tree_lines(tree, 0, &mut lines),
        None => lines.push(Line::from(format!(
            "machine {} unknown here: pass --machines FILE.stm to draw it",
            exe.definition_id
        ))),
    }
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" statechart ")),
        left,
    );

    let mut info = vec![
        Line::from(format!("execution  {}", exe.id)),
        Line::from(format!("machine    {}", exe.definition_id)),
        Line::from(vec![Span::raw("status     "), status_span(exe.status)]),
    ];
    if let Some(o) = &exe.outcome {
        info.push(Line::from(format!("outcome    {o}")));
    }
    if let Some(e) = &exe.error {
        info.push(Line::from(Span::styled(
            format!("error      {e}"),
            Style::default().fg(Color::Red),
        )));
    }
    info.push(Line::from(format!(
        "active     {}",
        exe.active_path.as_deref().unwrap_or("—")
    )));
    if let Some(p) = &exe.parent_id {
        info.push(Line::from(format!("parent     {p}")));
    }
    info.push(Line::from(format!(
        "events     {}   version {}",
        exe.processed_events, exe.version
    )));
    info.push(Line::from(""));
    info.push(Line::styled(
        "context",
        Style::default().add_modifier(Modifier::BOLD),
    ));
    if exe.context.is_empty() {
        info.push(Line::from("  —"));
    }
    for (k, v) in &exe.context {
        let mut text = v.to_string();
        if text.chars().count() > 60 {
            text = text.chars().take(59).collect::<String>() + "…";
        }
        info.push(Line::from(format!("  {k} = {text}")));
    }
    info.push(Line::from(""));
    info.push(Line::styled(
        "timers",
        Style::default().add_modifier(Modifier::BOLD),
    ));
    if detail.timers.is_empty() {
        info.push(Line::from("  —"));
    }
    for (path, at) in &detail.timers {
        info.push(Line::from(format!("  {path} at {}", utc(*at))));
    }
    if !exe.deferred.is_empty() {
        info.push(Line::from(""));
        info.push(Line::from(format!(
            "deferred   {} event(s)",
            exe.deferred.len()
        )));
    }
    frame.render_widget(
        Paragraph::new(info)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" execution ")),
        right,
    );
}
