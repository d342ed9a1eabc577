//! Whether output is coloured: one decision for every command, from `--color` and `NO_COLOR`.
//!
//! `--color always` colours, `--color never` does not, and `--color auto` (the default) colours
//! only a terminal and only when `NO_COLOR` is unset or empty. Every escape sequence tfrs
//! writes goes through [`Colour::paint`], so nothing is coloured that this did not allow.

use super::args::ColorChoice;
use std::ffi::{OsStr, OsString};
use std::io::IsTerminal;

/// Whether to colour one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Colour(bool);

impl Colour {
    /// No colour at all.
    pub const OFF: Colour = Colour(false);

    /// The decision for a stream: `choice` from `--color`, whether the stream is a terminal,
    /// and the value of `NO_COLOR` (a non-empty value turns `auto` off).
    #[must_use]
    pub fn decide(choice: ColorChoice, is_terminal: bool, no_color: Option<&OsStr>) -> Colour {
        Colour(match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => is_terminal && no_color.is_none_or(OsStr::is_empty),
        })
    }

    /// The decision for stdout in this process.
    #[must_use]
    pub fn stdout(choice: ColorChoice) -> Colour {
        Colour::decide(choice, std::io::stdout().is_terminal(), std::env::var_os("NO_COLOR").as_deref())
    }

    /// Whether colour is on.
    #[must_use]
    pub fn is_on(self) -> bool {
        self.0
    }

    /// `text` in the SGR colour `code` (`1` bold, `31` red, ...) when colour is on, else as it is.
    #[must_use]
    pub fn paint(self, code: &str, text: &str) -> String {
        if self.0 { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }

    /// The same decision for clap's own help and error messages.
    #[must_use]
    pub fn for_clap(choice: ColorChoice) -> clap::ColorChoice {
        // NB: clap's `auto` already looks at the terminal and `NO_COLOR` itself.
        match choice {
            ColorChoice::Auto => clap::ColorChoice::Auto,
            ColorChoice::Always => clap::ColorChoice::Always,
            ColorChoice::Never => clap::ColorChoice::Never,
        }
    }
}

/// `--color` as the command line gives it, read before clap parses it (so that clap's own
/// messages, the usage errors among them, follow it too); `auto` when absent or not a valid
/// choice (clap then reports the invalid value).
#[must_use]
pub fn choice_in(argv: &[OsString]) -> ColorChoice {
    let mut choice = ColorChoice::Auto;
    let mut words = argv.iter().skip(1).map(|word| word.to_str());
    while let Some(word) = words.next() {
        let value = match word {
            Some("--") => break,
            Some("--color") => words.next().flatten(),
            Some(word) => word.strip_prefix("--color="),
            None => None,
        };
        if let Some(value) = value {
            choice = <ColorChoice as clap::ValueEnum>::from_str(value, false).unwrap_or(choice);
        }
    }
    choice
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_and_never_win_over_the_terminal_and_no_color() {
        for terminal in [false, true] {
            for no_color in [None, Some(OsStr::new("")), Some(OsStr::new("1"))] {
                assert!(Colour::decide(ColorChoice::Always, terminal, no_color).is_on());
                assert!(!Colour::decide(ColorChoice::Never, terminal, no_color).is_on());
            }
        }
    }

    #[test]
    fn auto_colours_a_terminal_unless_no_color_is_non_empty() {
        assert!(Colour::decide(ColorChoice::Auto, true, None).is_on());
        assert!(Colour::decide(ColorChoice::Auto, true, Some(OsStr::new(""))).is_on());
        assert!(!Colour::decide(ColorChoice::Auto, true, Some(OsStr::new("1"))).is_on());
        assert!(!Colour::decide(ColorChoice::Auto, true, Some(OsStr::new("0"))).is_on());
        assert!(!Colour::decide(ColorChoice::Auto, false, None).is_on());
    }

    #[test]
    fn paint_writes_escapes_only_when_on() {
        assert_eq!(Colour(true).paint("31", "x"), "\x1b[31mx\x1b[0m");
        assert_eq!(Colour::OFF.paint("31", "x"), "x");
    }

    #[test]
    fn the_choice_is_read_before_parsing() {
        let argv = |words: &[&str]| words.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(choice_in(&argv(&["tfrs", "diff", "x"])), ColorChoice::Auto);
        assert_eq!(choice_in(&argv(&["tfrs", "--color", "always", "diff"])), ColorChoice::Always);
        assert_eq!(choice_in(&argv(&["tfrs", "diff", "--color=never"])), ColorChoice::Never);
        assert_eq!(choice_in(&argv(&["tfrs", "diff", "--color=purple"])), ColorChoice::Auto);
        assert_eq!(choice_in(&argv(&["tfrs", "diff", "--", "--color=never"])), ColorChoice::Auto);
    }
}
