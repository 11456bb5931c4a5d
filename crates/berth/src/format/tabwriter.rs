//! Elastic tab stops as Go's `text/tabwriter` computes them, for docker's table output.
//!
//! The docker CLI writes each table through `tabwriter.NewWriter(out, 10, 1, 3, ' ', 0)`
//! (its fork in `cli/command/formatter/tabwriter`, which measures text in terminal cells
//! rather than runes). Input is text whose cells end in a tab; tab-terminated cells in
//! consecutive lines form a column block, and every cell of a block is padded to the widest
//! cell in the block plus the padding, but at least the minimum width. The last cell of a
//! line is not tab-terminated, belongs to no column and is never padded.

/// One cell of a line: its text and its display width.
#[derive(Debug, Default)]
struct Cell {
    text: String,
    width: usize,
}

/// Aligns tab-separated text like Go's `tabwriter.Writer` with no flags set and a
/// non-tab padding character.
#[derive(Debug)]
pub struct TabWriter {
    min_width: usize,
    padding: usize,
    pad_character: char,
    /// Completed lines, the last one being the line now being written.
    lines: Vec<Vec<Cell>>,
    /// The cell now being written (not yet terminated by a tab or line break).
    cell: String,
    /// Column widths of the column blocks enclosing the lines now being formatted.
    widths: Vec<usize>,
    output: String,
}

impl TabWriter {
    /// A writer with Go's `minwidth`, `padding` and `padchar` parameters (`tabwidth` only
    /// matters for tab padding, which this writer does not offer).
    pub fn new(min_width: usize, padding: usize, pad_character: char) -> TabWriter {
        TabWriter {
            min_width,
            padding,
            pad_character,
            lines: vec![Vec::new()],
            cell: String::new(),
            widths: Vec::new(),
            output: String::new(),
        }
    }

    /// The settings every docker table uses: minimum width 10, padding 3, spaces.
    pub fn docker() -> TabWriter {
        TabWriter::new(10, 3, ' ')
    }

    /// Adds text; `\t` and `\v` end a cell, `\n` and `\f` end a line.
    pub fn write_str(&mut self, text: &str) {
        for character in text.chars() {
            match character {
                '\t' | '\u{b}' => {
                    self.terminate_cell();
                }
                '\n' | '\u{c}' => {
                    let cells = self.terminate_cell();
                    self.lines.push(Vec::new());
                    // A line with a single cell ends every column block (its only cell is
                    // in no column), and a form feed ends them by definition: either way
                    // everything so far can be laid out now.
                    if character == '\u{c}' || cells == 1 {
                        self.flush();
                    }
                }
                other => self.cell.push(other),
            }
        }
    }

    /// Lays out everything written and returns the aligned text.
    pub fn finish(mut self) -> String {
        self.flush();
        self.output
    }

    fn terminate_cell(&mut self) -> usize {
        let text = std::mem::take(&mut self.cell);
        let width = display_width(&text);
        let line = self
            .lines
            .last_mut()
            .expect("the writer always holds a current line");
        line.push(Cell { text, width });
        line.len()
    }

    fn flush(&mut self) {
        if !self.cell.is_empty() {
            self.terminate_cell();
        }
        let count = self.lines.len();
        self.format(0, count);
        self.lines.clear();
        self.lines.push(Vec::new());
        self.widths.clear();
    }

    /// Lays out lines `first..end`, whose columns left of `self.widths.len()` already have
    /// their widths; finds each block of lines sharing the next column, fixes its width,
    /// and recurses into the block for the columns further right.
    fn format(&mut self, first: usize, end: usize) {
        let column = self.widths.len();
        let mut first = first;
        let mut this = first;
        while this < end {
            if !has_column(&self.lines[this], column) {
                this += 1;
                continue;
            }
            // Lines before the block have no cell in this column.
            self.write_lines(first, this);
            first = this;
            let mut width = self.min_width;
            while this < end && has_column(&self.lines[this], column) {
                width = width.max(self.lines[this][column].width + self.padding);
                this += 1;
            }
            self.widths.push(width);
            self.format(first, this);
            self.widths.pop();
            first = this;
        }
        self.write_lines(first, end);
    }

    fn write_lines(&mut self, first: usize, end: usize) {
        for index in first..end {
            for (column, cell) in self.lines[index].iter().enumerate() {
                self.output.push_str(&cell.text);
                if let Some(&width) = self.widths.get(column) {
                    let padding = width.saturating_sub(cell.width);
                    self.output
                        .extend(std::iter::repeat_n(self.pad_character, padding));
                }
            }
            // The last line is the one still being written; it has no line break yet.
            if index + 1 < self.lines.len() {
                self.output.push('\n');
            }
        }
    }
}

/// Whether `line` has a tab-terminated cell in `column` (its last cell never counts).
fn has_column(line: &[Cell], column: usize) -> bool {
    column + 1 < line.len()
}

/// Terminal cells taken by `text`: two for East Asian wide and fullwidth characters, none
/// for combining marks and control characters, one otherwise. This approximates the
/// `go-runewidth` measure docker's tabwriter uses for the ranges seen in practice.
pub fn display_width(text: &str) -> usize {
    text.chars().map(character_width).sum()
}

fn character_width(character: char) -> usize {
    let code = u32::from(character);
    if code < 0x20 || (0x7f..0xa0).contains(&code) {
        return 0;
    }
    if code < 0x300 {
        return 1;
    }
    const ZERO_WIDTH: &[(u32, u32)] = &[
        (0x0300, 0x036f), // combining diacritical marks
        (0x0483, 0x0489),
        (0x0591, 0x05bd),
        (0x0610, 0x061a),
        (0x064b, 0x065f),
        (0x200b, 0x200f), // zero-width space, joiners, direction marks
        (0x202a, 0x202e),
        (0x2060, 0x2064),
        (0x20d0, 0x20ff), // combining marks for symbols
        (0xfe00, 0xfe0f), // variation selectors
        (0xfe20, 0xfe2f),
        (0xfeff, 0xfeff),
    ];
    const WIDE: &[(u32, u32)] = &[
        (0x1100, 0x115f), // Hangul Jamo
        (0x231a, 0x231b),
        (0x2329, 0x232a),
        (0x23e9, 0x23ec),
        (0x25fd, 0x25fe),
        (0x2614, 0x2615),
        (0x2648, 0x2653),
        (0x26aa, 0x26ab),
        (0x26bd, 0x26be),
        (0x26c4, 0x26c5),
        (0x26f2, 0x26f5),
        (0x2705, 0x2705),
        (0x270a, 0x270b),
        (0x274c, 0x274c),
        (0x2753, 0x2757),
        (0x2795, 0x2797),
        (0x2b1b, 0x2b1c),
        (0x2e80, 0x303e), // CJK radicals, punctuation
        (0x3041, 0x33ff), // kana, CJK compatibility
        (0x3400, 0x4dbf), // CJK extension A
        (0x4e00, 0x9fff), // CJK unified ideographs
        (0xa000, 0xa4cf), // Yi
        (0xa960, 0xa97f),
        (0xac00, 0xd7a3), // Hangul syllables
        (0xf900, 0xfaff), // CJK compatibility ideographs
        (0xfe10, 0xfe19),
        (0xfe30, 0xfe6f), // CJK compatibility forms
        (0xff00, 0xff60), // fullwidth forms
        (0xffe0, 0xffe6),
        (0x16fe0, 0x16fe4),
        (0x17000, 0x18cff), // Tangut
        (0x1b000, 0x1b2ff), // kana supplement
        (0x1f004, 0x1f004),
        (0x1f0cf, 0x1f0cf),
        (0x1f18e, 0x1f18e),
        (0x1f191, 0x1f19a),
        (0x1f200, 0x1f251),
        (0x1f300, 0x1f64f), // pictographs and emoticons
        (0x1f680, 0x1f6ff), // transport symbols
        (0x1f7e0, 0x1f7eb),
        (0x1f90c, 0x1f9ff), // supplemental pictographs
        (0x1fa70, 0x1faff),
        (0x20000, 0x2fffd), // CJK extensions B onwards
        (0x30000, 0x3fffd),
    ];
    let within = |ranges: &[(u32, u32)]| {
        ranges
            .binary_search_by(|&(low, high)| {
                if high < code {
                    std::cmp::Ordering::Less
                } else if low > code {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
    };
    if within(ZERO_WIDTH) {
        0
    } else if within(WIDE) {
        2
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn align(min_width: usize, padding: usize, text: &str) -> String {
        let mut writer = TabWriter::new(min_width, padding, ' ');
        writer.write_str(text);
        writer.finish()
    }

    #[test]
    fn column_blocks_follow_go_tabwriter_doc_example() {
        // The example from Go's text/tabwriter documentation: the "b" and "c" cells are in
        // different columns because the line "a\t" interrupts the second column.
        let text = "aaaa\tbbb\td\naa\tb\tdd\na\t\naa\tcccc\teee\n";
        assert_eq!(
            align(0, 1, text),
            "aaaa bbb d\naa   b   dd\na    \naa   cccc eee\n"
        );
    }

    #[test]
    fn minimum_width_applies_to_narrow_columns() {
        assert_eq!(
            align(10, 3, "TAG\tX\nlatest\tY\n"),
            "TAG       X\nlatest    Y\n"
        );
    }

    #[test]
    fn trailing_tab_pads_the_last_column_and_text_without_newline_is_kept() {
        assert_eq!(align(0, 2, "a\tb\t\nccc\td\t\n"), "a    b  \nccc  d  \n");
        assert_eq!(align(0, 1, "a\tb\nlong\tc"), "a    b\nlong c");
    }

    #[test]
    fn single_cell_line_splits_blocks() {
        assert_eq!(
            align(0, 1, "a\tb\nheading\nlonger\tc\n"),
            "a b\nheading\nlonger c\n"
        );
    }

    #[test]
    fn empty_cells_are_padded() {
        assert_eq!(align(0, 1, "\tx\nabc\ty\n"), "    x\nabc y\n");
    }

    #[test]
    fn form_feed_ends_blocks_and_prints_as_newline() {
        assert_eq!(align(0, 1, "a\tb\n\u{c}long\tc\n"), "a b\n\nlong c\n");
    }

    #[test]
    fn wide_characters_count_two_cells() {
        assert_eq!(display_width("日本"), 4);
        assert_eq!(display_width("e\u{301}"), 1);
        assert_eq!(display_width("abc"), 3);
        assert_eq!(align(0, 1, "日本\tx\nabc\ty\n"), "日本 x\nabc  y\n");
    }
}
