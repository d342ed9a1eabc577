//! A large YAML stream cut into runs of whole documents, to parse side by side.

/// A large stream cut to parse in parallel: each piece with the lines before it, every piece
/// a run of whole documents starting at a `---` line (one piece for a small stream, or one
/// with directives, which apply past a cut).
pub(super) fn pieces(text: &str) -> Vec<(&str, usize)> {
    const PIECE: usize = 256 * 1024;
    let bytes = text.as_bytes();
    // NB: searched, not walked line by line: this runs before the parsing side by side starts.
    if text.len() < 2 * PIECE || text.starts_with('%') || memchr::memmem::find(bytes, b"\n%").is_some() {
        return vec![(text, 0)];
    }
    // NB: where each piece starts, `(byte offset, lines before it)`: at the first `---` line
    // that starts at least `PIECE` bytes after the last cut.
    let mut cuts = vec![(0, 0)];
    let mut from = PIECE - 1;
    while let Some(found) = bytes.get(from..).and_then(|rest| memchr::memmem::find(rest, b"\n---")) {
        let start = from + found + 1;
        let after = &bytes[start + 3..];
        if after.is_empty() || matches!(after[0], b' ' | b'\t' | b'\r' | b'\n') {
            let (last, lines) = cuts[cuts.len() - 1];
            cuts.push((start, lines + memchr::memchr_iter(b'\n', &bytes[last..start]).count()));
            from = start + PIECE - 1;
        } else {
            from = start;
        }
    }
    let ends = cuts.iter().skip(1).map(|&(start, _)| start).chain([text.len()]);
    cuts.iter().zip(ends).map(|(&(start, line), end)| (&text[start..end], line)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cuts as they were first made, line by line: [`pieces`] must find the same.
    fn pieces_line_by_line(text: &str) -> Vec<(&str, usize)> {
        const PIECE: usize = 256 * 1024;
        if text.len() < 2 * PIECE || text.lines().any(|line| line.starts_with('%')) {
            return vec![(text, 0)];
        }
        let mut cuts = vec![(0, 0)];
        let (mut offset, mut line) = (0, 0);
        for piece in text.split_inclusive('\n') {
            let marker = piece.strip_prefix("---").is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']));
            if marker && offset - cuts[cuts.len() - 1].0 >= PIECE {
                cuts.push((offset, line));
            }
            offset += piece.len();
            line += 1;
        }
        let ends = cuts.iter().skip(1).map(|&(start, _)| start).chain([text.len()]);
        cuts.iter().zip(ends).map(|(&(start, line), end)| (&text[start..end], line)).collect()
    }

    #[test]
    fn a_stream_is_cut_where_it_was_cut_line_by_line() {
        let document = |i: usize| {
            format!("---\nkind: TFRServer\nmetadata: {{ name: s{i} }}\nspec:\n  note: \"{}\"\n----not-a-marker: x\n", "y".repeat(i % 700))
        };
        let plain: String = (0..3000).map(document).collect();
        let crlf = plain.replace('\n', "\r\n");
        let tabbed = plain.replace("---\n", "---\t# c\n");
        let directive = format!("{plain}%YAML 1.2\n");
        let ending = format!("{plain}---");
        for text in [&plain, &crlf, &tabbed, &directive, &ending, &plain[..1000]] {
            let (fast, slow) = (pieces(text), pieces_line_by_line(text));
            assert_eq!(fast, slow, "{} bytes", text.len());
        }
        assert!(pieces(&plain).len() > 3, "a large stream is cut");
        assert_eq!(pieces(&directive).len(), 1, "a directive keeps it whole");
    }
}
