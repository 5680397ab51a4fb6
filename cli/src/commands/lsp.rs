//! `harel lsp`: a language server for `.stm` files over stdio (harel's `harel lsp`).
//!
//! Diagnostics on open, change and save (the parser's error, else `harel validate`'s
//! issues, at the state they are about), hover and go-to-definition on states, events,
//! guards, fragments, actions and machines (across `import`s, and on an import's path to
//! open that file), completion of the names the keyword before the cursor expects, and
//! the document's outline. The analyses are `harel_lang::ide`; this file only speaks
//! the protocol: whole-document sync, and UTF-16 columns (the protocol's default) turned
//! into the character columns the language counts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
    Notification as _, PublishDiagnostics,
};
use lsp_types::request::{
    Completion, DocumentSymbolRequest, GotoDefinition, HoverRequest, Request as _,
};
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionList, CompletionOptions, CompletionResponse,
    Diagnostic, DiagnosticSeverity, DocumentSymbol, DocumentSymbolResponse, Documentation,
    GotoDefinitionResponse, Hover, HoverContents, HoverProviderCapability, Location, MarkupContent,
    MarkupKind, NumberOrString, OneOf, Position, PublishDiagnosticsParams, Range,
    ServerCapabilities, SymbolKind as LspSymbolKind, TextDocumentPositionParams,
    TextDocumentSyncCapability, TextDocumentSyncKind, Url,
};

use harel_lang::ide::{self, Outline, Symbol, SymbolKind};
use harel_lang::Severity;

#[derive(clap::Args)]
pub struct LspArgs {
    /// Accepted for editors that pass it; stdio is the only transport
    #[arg(long)]
    stdio: bool,
}

/// Serve until the client's `shutdown` and `exit`.
pub async fn execute(_args: LspArgs) -> anyhow::Result<ExitCode> {
    // lsp-server is blocking: a thread of its own, so the runtime's worker is not held
    tokio::task::spawn_blocking(serve)
        .await
        .context("the language server thread")??;
    Ok(ExitCode::SUCCESS)
}

fn serve() -> anyhow::Result<()> {
    let (connection, io_threads) = Connection::stdio();
    let capabilities = ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![" ".into(), ".".into(), "|".into()]),
            ..CompletionOptions::default()
        }),
        document_symbol_provider: Some(OneOf::Left(true)),
        ..ServerCapabilities::default()
    };
    connection
        .initialize(serde_json::to_value(capabilities)?)
        .context("the initialize handshake")?;
    let mut server = Server {
        connection: &connection,
        documents: HashMap::new(),
        last_parsed: HashMap::new(),
    };
    for message in &connection.receiver {
        match message {
            Message::Request(req) => {
                if connection.handle_shutdown(&req)? {
                    break;
                }
                server.request(req)?;
            }
            Message::Notification(note) => server.notification(note)?,
            Message::Response(_) => {}
        }
    }
    drop(server);
    drop(connection);
    io_threads.join().context("the stdio threads")?;
    Ok(())
}

struct Server<'c> {
    connection: &'c Connection,
    /// The open documents' text, as the editor has it (unsaved edits included).
    documents: HashMap<Url, String>,
    /// Each document's latest text that parsed: completion is asked for mid-edit, when
    /// the text rarely parses (`on ` before its event), and the names are still these.
    last_parsed: HashMap<Url, String>,
}

impl Server<'_> {
    fn notification(&mut self, note: Notification) -> anyhow::Result<()> {
        let uri = match note.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let p: lsp_types::DidOpenTextDocumentParams = serde_json::from_value(note.params)?;
                self.documents
                    .insert(p.text_document.uri.clone(), p.text_document.text);
                p.text_document.uri
            }
            DidChangeTextDocument::METHOD => {
                let p: lsp_types::DidChangeTextDocumentParams =
                    serde_json::from_value(note.params)?;
                // whole-document sync: the last change is the text
                if let Some(change) = p.content_changes.into_iter().last() {
                    self.documents
                        .insert(p.text_document.uri.clone(), change.text);
                }
                p.text_document.uri
            }
            DidSaveTextDocument::METHOD => {
                let p: lsp_types::DidSaveTextDocumentParams = serde_json::from_value(note.params)?;
                if let Some(text) = p.text {
                    self.documents.insert(p.text_document.uri.clone(), text);
                }
                p.text_document.uri
            }
            DidCloseTextDocument::METHOD => {
                let p: lsp_types::DidCloseTextDocumentParams = serde_json::from_value(note.params)?;
                self.documents.remove(&p.text_document.uri);
                self.last_parsed.remove(&p.text_document.uri);
                // a closed file's squiggles go with it
                return self.publish(p.text_document.uri, Vec::new());
            }
            _ => return Ok(()),
        };
        let Some(text) = self.documents.get(&uri) else {
            return Ok(());
        };
        if harel_lang::parse(text, "").is_ok() {
            self.last_parsed.insert(uri.clone(), text.clone());
        }
        let path = uri.to_file_path().ok();
        let diagnostics = ide::analyze(text, path.as_deref())
            .into_iter()
            .map(|d| diagnostic(text, d))
            .collect();
        self.publish(uri, diagnostics)
    }

    fn publish(&self, uri: Url, diagnostics: Vec<Diagnostic>) -> anyhow::Result<()> {
        let params = PublishDiagnosticsParams {
            uri,
            diagnostics,
            version: None,
        };
        let note = Notification::new(PublishDiagnostics::METHOD.to_string(), params);
        self.connection.sender.send(Message::Notification(note))?;
        Ok(())
    }

    fn request(&self, req: Request) -> anyhow::Result<()> {
        let id = req.id.clone();
        let result = match req.method.as_str() {
            HoverRequest::METHOD => {
                let p: lsp_types::HoverParams = serde_json::from_value(req.params)?;
                serde_json::to_value(self.hover(&p.text_document_position_params))?
            }
            GotoDefinition::METHOD => {
                let p: lsp_types::GotoDefinitionParams = serde_json::from_value(req.params)?;
                serde_json::to_value(self.definition(&p.text_document_position_params))?
            }
            Completion::METHOD => {
                let p: lsp_types::CompletionParams = serde_json::from_value(req.params)?;
                serde_json::to_value(self.completion(&p.text_document_position))?
            }
            DocumentSymbolRequest::METHOD => {
                let p: lsp_types::DocumentSymbolParams = serde_json::from_value(req.params)?;
                serde_json::to_value(self.outline(&p.text_document.uri))?
            }
            _ => {
                let err = Response::new_err(
                    id,
                    lsp_server::ErrorCode::MethodNotFound as i32,
                    format!("harel lsp does not handle {}", req.method),
                );
                self.connection.sender.send(Message::Response(err))?;
                return Ok(());
            }
        };
        self.respond(id, result)
    }

    fn respond(&self, id: RequestId, result: serde_json::Value) -> anyhow::Result<()> {
        let response = Response {
            id,
            result: Some(result),
            error: None,
        };
        self.connection.sender.send(Message::Response(response))?;
        Ok(())
    }

    /// The document's text and path, and the cursor in character columns.
    fn at<'a>(&'a self, at: &'a TextDocumentPositionParams) -> Option<Cursor<'a>> {
        let text = self.documents.get(&at.text_document.uri)?;
        let line = at.position.line as usize;
        let row = text.split('\n').nth(line).unwrap_or("");
        Some(Cursor {
            uri: &at.text_document.uri,
            text,
            path: at.text_document.uri.to_file_path().ok(),
            line,
            character: from_utf16(row, at.position.character),
        })
    }

    fn hover(&self, at: &TextDocumentPositionParams) -> Option<Hover> {
        let cur = self.at(at)?;
        let word = ide::word_at(cur.text, cur.line, cur.character)?;
        let idx = ide::index(cur.text, cur.path.as_deref());
        let sym = ide::resolve(&idx, cur.text, &word)?;
        Some(Hover {
            contents: HoverContents::Markup(markdown(&sym.detail)),
            range: Some(Range {
                start: position(cur.text, word.line, word.start),
                end: position(cur.text, word.line, word.end),
            }),
        })
    }

    fn definition(&self, at: &TextDocumentPositionParams) -> Option<GotoDefinitionResponse> {
        let cur = self.at(at)?;
        // on an import's path or alias: open that file
        if let Some(rel) = ide::import_at(cur.text, cur.line, cur.character) {
            let dir = cur.path.as_deref().and_then(Path::parent)?;
            let file = std::fs::canonicalize(dir.join(rel)).ok()?;
            let start = Position::new(0, 0);
            return Some(GotoDefinitionResponse::Scalar(Location {
                uri: Url::from_file_path(file).ok()?,
                range: Range::new(start, start),
            }));
        }
        let word = ide::word_at(cur.text, cur.line, cur.character)?;
        let idx = ide::index(cur.text, cur.path.as_deref());
        let sym = ide::resolve(&idx, cur.text, &word)?;
        Some(GotoDefinitionResponse::Scalar(location(
            cur.uri, cur.text, sym,
        )?))
    }

    fn completion(&self, at: &TextDocumentPositionParams) -> Option<CompletionResponse> {
        let cur = self.at(at)?;
        let kind = ide::category_at(cur.text, cur.line, cur.character);
        let mut idx = ide::index(cur.text, cur.path.as_deref());
        if harel_lang::parse(cur.text, "").is_err() {
            // mid-edit: the names of its last version that parsed, with the context
            // fields of this one
            if let Some(parsed) = self.last_parsed.get(cur.uri) {
                let fields = std::mem::take(&mut idx.context_fields);
                idx = ide::index(parsed, cur.path.as_deref());
                idx.context_fields.extend(fields);
            }
        }
        let mut items: Vec<CompletionItem> = idx
            .names(kind)
            .into_iter()
            .map(|s| CompletionItem {
                label: s.name.clone(),
                kind: Some(completion_kind(s.kind)),
                detail: Some(kind_name(s.kind).to_string()),
                documentation: Some(Documentation::MarkupContent(markdown(&s.detail))),
                ..CompletionItem::default()
            })
            .collect();
        // keywords where no name is expected, or when none is known (mid-edit, the
        // document rarely parses)
        if kind.is_none() || items.is_empty() {
            items.extend(ide::KEYWORDS.iter().map(|k| CompletionItem {
                label: (*k).to_string(),
                kind: Some(CompletionItemKind::KEYWORD),
                ..CompletionItem::default()
            }));
        }
        Some(CompletionResponse::List(CompletionList {
            is_incomplete: false,
            items,
        }))
    }

    fn outline(&self, uri: &Url) -> Option<DocumentSymbolResponse> {
        let text = self.documents.get(uri)?;
        let path = uri.to_file_path().ok();
        let idx = ide::index(text, path.as_deref());
        let symbols = ide::outline(&idx)
            .iter()
            .map(|o| document_symbol(text, o))
            .collect();
        Some(DocumentSymbolResponse::Nested(symbols))
    }
}

struct Cursor<'a> {
    uri: &'a Url,
    text: &'a str,
    path: Option<PathBuf>,
    line: usize,
    character: usize,
}

fn markdown(value: &str) -> MarkupContent {
    MarkupContent {
        kind: MarkupKind::Markdown,
        value: value.to_string(),
    }
}

/// A character column of `line` (0-based) as the protocol's UTF-16 position.
fn position(text: &str, line: usize, character: usize) -> Position {
    let row = text.split('\n').nth(line).unwrap_or("");
    let units: usize = row.chars().take(character).map(char::len_utf16).sum();
    Position::new(line as u32, units as u32)
}

/// A UTF-16 column of `row` as a character column.
fn from_utf16(row: &str, units: u32) -> usize {
    let mut seen = 0;
    row.chars()
        .take_while(|c| {
            seen += c.len_utf16();
            seen <= units as usize
        })
        .count()
}

/// The range of a symbol's name in `text` (1-based position in, 0-based out).
fn name_range(text: &str, sym: &Symbol) -> Range {
    let (line, col) = (sym.line.saturating_sub(1), sym.column.saturating_sub(1));
    let len = sym
        .name
        .rsplit('.')
        .next()
        .unwrap_or(&sym.name)
        .chars()
        .count();
    Range::new(position(text, line, col), position(text, line, col + len))
}

/// Where a symbol is declared: in the open document, or in the file it came from.
fn location(doc: &Url, doc_text: &str, sym: &Symbol) -> Option<Location> {
    match &sym.file {
        None => Some(Location {
            uri: doc.clone(),
            range: name_range(doc_text, sym),
        }),
        Some(file) => {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            Some(Location {
                uri: Url::from_file_path(file).ok()?,
                range: name_range(&text, sym),
            })
        }
    }
}

fn diagnostic(text: &str, d: ide::Diagnostic) -> Diagnostic {
    Diagnostic {
        range: Range::new(
            position(text, d.line.saturating_sub(1), d.column.saturating_sub(1)),
            position(
                text,
                d.end_line.saturating_sub(1),
                d.end_column.saturating_sub(1),
            ),
        ),
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
        }),
        code: d.code.map(|c| NumberOrString::String(c.to_string())),
        source: Some("harel".into()),
        message: d.message,
        ..Diagnostic::default()
    }
}

fn kind_name(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::State => "state",
        SymbolKind::Event => "event",
        SymbolKind::Guard => "guard",
        SymbolKind::Fragment => "fragment",
        SymbolKind::Machine => "machine",
        SymbolKind::Action => "action",
        SymbolKind::Context => "context",
    }
}

/// harel's completion kinds, and Function for actions.
fn completion_kind(kind: SymbolKind) -> CompletionItemKind {
    match kind {
        SymbolKind::State | SymbolKind::Machine => CompletionItemKind::CLASS,
        SymbolKind::Event => CompletionItemKind::EVENT,
        SymbolKind::Guard => CompletionItemKind::VARIABLE,
        SymbolKind::Fragment => CompletionItemKind::MODULE,
        SymbolKind::Action => CompletionItemKind::FUNCTION,
        SymbolKind::Context => CompletionItemKind::FIELD,
    }
}

fn symbol_kind(kind: SymbolKind) -> LspSymbolKind {
    match kind {
        SymbolKind::State | SymbolKind::Machine => LspSymbolKind::CLASS,
        SymbolKind::Event => LspSymbolKind::EVENT,
        SymbolKind::Guard => LspSymbolKind::BOOLEAN,
        SymbolKind::Fragment => LspSymbolKind::MODULE,
        SymbolKind::Action => LspSymbolKind::FUNCTION,
        SymbolKind::Context => LspSymbolKind::FIELD,
    }
}

fn document_symbol(text: &str, o: &Outline) -> DocumentSymbol {
    let range = name_range(text, &o.symbol);
    // `deprecated` is the protocol's old field, still in the struct; `tags` replaced it
    #[allow(deprecated)]
    DocumentSymbol {
        name: o.symbol.name.clone(),
        detail: Some(kind_name(o.symbol.kind).to_string()),
        kind: symbol_kind(o.symbol.kind),
        tags: None,
        deprecated: None,
        range,
        selection_range: range,
        children: Some(
            o.children
                .iter()
                .map(|c| document_symbol(text, c))
                .collect(),
        ),
    }
}
