//! Byte offsets to `(line, column)`, in time that does not grow with the text before them.
//!
//! pest's `Position::line_col` counts from the start of the text on every call, so the
//! transformer, which asks it for every declaration, took time quadratic in the file's size
//! (8,000 states: 25 s). Here the line starts are indexed once, and the column is counted
//! on from the last position asked when it is on the same line, earlier: the transformer
//! asks in the text's order, so a file of one 100 KB line costs one pass too.

use std::cell::Cell;

use crate::error::Pos;

pub(crate) struct Lines<'t> {
    text: &'t str,
    /// Byte offset where each line starts.
    starts: Vec<usize>,
    /// The last offset asked and its 0-based column (in characters) on its line.
    last: Cell<(usize, usize)>,
}

impl<'t> Lines<'t> {
    pub(crate) fn new(text: &'t str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines {
            text,
            starts,
            last: Cell::new((0, 0)),
        }
    }

    /// The 1-based line and column (columns count characters, as pest's and harel's do) of
    /// the byte `offset`, a char boundary of the text.
    pub(crate) fn pos(&self, offset: usize) -> Pos {
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let (last, last_col) = self.last.get();
        let col = if (start..=offset).contains(&last) {
            last_col + self.text[last..offset].chars().count()
        } else {
            self.text[start..offset].chars().count()
        };
        self.last.set((offset, col));
        (line + 1, col + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_as_pest_counts_them_in_any_order() {
        let text = "hello 你好 A🎈C\nworld\n\nx";
        let lines = Lines::new(text);
        let offsets: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        let forward: Vec<Pos> = offsets.iter().map(|&o| lines.pos(o)).collect();
        for (&offset, &pos) in offsets.iter().zip(&forward) {
            let pest = pest::Position::new(text, offset)
                .expect("a boundary")
                .line_col();
            assert_eq!(pos, pest, "offset {offset}");
        }
        // backwards and jumping: the same answers
        for (&offset, &pos) in offsets.iter().zip(&forward).rev() {
            assert_eq!(lines.pos(offset), pos, "offset {offset}");
        }
        assert_eq!(lines.pos(text.len()), (4, 2));
    }
}
