//! Splits text-format source into tokens, each with its 1-based line and column.
//! Comments run from `;` to the end of the line and are skipped; the case-file layer
//! keeps them for printing.

use super::ParseError;

/// What a token is.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum TokenKind {
    /// A bare word: keywords, operator names, block labels, types.
    Ident(String),
    /// `%name`.
    LocalName(String),
    /// `@name`.
    GlobalName(String),
    /// A decimal or `0x` hexadecimal integer, possibly negative.
    Int(i128),
    /// One of `( ) [ ] { } , : =` or `->`.
    Punct(&'static str),
    /// End of input.
    Eof,
}

impl TokenKind {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            TokenKind::Ident(s) => format!("`{s}`"),
            TokenKind::LocalName(s) => format!("`%{s}`"),
            TokenKind::GlobalName(s) => format!("`@{s}`"),
            TokenKind::Int(v) => format!("`{v}`"),
            TokenKind::Punct(p) => format!("`{p}`"),
            TokenKind::Eof => "end of input".to_string(),
        }
    }
}

/// A token and where it starts.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Token {
    pub kind: TokenKind,
    pub line: u32,
    pub col: u32,
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// Tokenizes `src`; the last token is always `Eof`.
pub fn lex(src: &str) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = vec![];
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    while i < chars.len() {
        let c = chars[i];
        let (tl, tc) = (line, col);
        let advance = |n: usize, i: &mut usize, col: &mut u32| {
            *i += n;
            *col += n as u32;
        };
        if c == '\n' {
            i += 1;
            line += 1;
            col = 1;
            continue;
        }
        if c.is_whitespace() {
            advance(1, &mut i, &mut col);
            continue;
        }
        if c == ';' {
            while i < chars.len() && chars[i] != '\n' {
                advance(1, &mut i, &mut col);
            }
            continue;
        }
        let word_from = |start: usize| word_at(&chars, start);
        let kind = if c == '%' || c == '@' {
            let (w, j) = word_from(i + 1);
            if w.is_empty() {
                return Err(ParseError::new(tl, tc, format!("expected a name after `{c}`")));
            }
            advance(j - i, &mut i, &mut col);
            if c == '%' {
                TokenKind::LocalName(w)
            } else {
                TokenKind::GlobalName(w)
            }
        } else if c.is_ascii_digit() || (c == '-' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let (v, j) = integer_at(&chars, i, tl, tc)?;
            advance(j - i, &mut i, &mut col);
            TokenKind::Int(v)
        } else if c == '-' && chars.get(i + 1) == Some(&'>') {
            advance(2, &mut i, &mut col);
            TokenKind::Punct("->")
        } else if let Some(p) = ["(", ")", "[", "]", "{", "}", ",", ":", "="]
            .into_iter()
            .find(|p| p.starts_with(c))
        {
            advance(1, &mut i, &mut col);
            TokenKind::Punct(p)
        } else if is_word(c) {
            let (w, j) = word_from(i);
            advance(j - i, &mut i, &mut col);
            TokenKind::Ident(w)
        } else {
            return Err(unexpected(c, tl, tc));
        };
        toks.push(Token { kind, line: tl, col: tc });
    }
    toks.push(Token { kind: TokenKind::Eof, line, col });
    Ok(toks)
}

/// The word (`is_word` characters) starting at `start`, and the index after it.
fn word_at(chars: &[char], start: usize) -> (String, usize) {
    let mut j = start;
    while j < chars.len() && is_word(chars[j]) {
        j += 1;
    }
    (chars[start..j].iter().collect::<String>(), j)
}

/// The integer literal at `i` (decimal or `0x` hexadecimal, an optional `-`; at most
/// `u64::MAX` in magnitude), and the index after it. `line` and `col` locate the error.
fn integer_at(chars: &[char], i: usize, line: u32, col: u32) -> Result<(i128, usize), ParseError> {
    let neg = chars[i] == '-';
    let start = if neg { i + 1 } else { i };
    let (w, j) = word_at(chars, start);
    let parsed = if let Some(hex) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        i128::from_str_radix(hex, 16)
    } else {
        w.parse::<i128>()
    };
    let v = parsed
        .ok()
        .filter(|v| *v <= u64::MAX as i128)
        .ok_or_else(|| ParseError::new(line, col, format!("expected an integer, found `{w}`")))?;
    Ok((if neg { -v } else { v }, j))
}

/// The error for a character that starts no token. An invisible or control character is
/// named by its code point (a NUL, a byte-order mark), never printed raw.
fn unexpected(c: char, line: u32, col: u32) -> ParseError {
    let shown = if c.is_control() || c.is_whitespace() || c == '\u{FEFF}' || c == '\u{200B}' {
        format!("U+{:04X}", c as u32)
    } else {
        format!("`{c}`")
    };
    ParseError::new(line, col, format!("unexpected character {shown}"))
}
