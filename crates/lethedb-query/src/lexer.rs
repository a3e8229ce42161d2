//! Turns query text into tokens, each with the character offset where it starts.
//!
//! The lexer knows the shape of words, numbers, strings, parameters and operators, and which
//! words are keywords (case-insensitively). It does not know the grammar: whether a keyword is
//! allowed where it stands is the parser's business. It never panics on any input; malformed
//! text becomes a `QueryError::Syntax` naming the offending text and its offset.

use crate::error::QueryError;

/// Declares a closed set of fixed spellings as an enum with a table of its spellings, so a
/// misspelt keyword or symbol in the parser does not compile.
macro_rules! spellings {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($variant,)*
        }

        impl $name {
            /// Every variant with its spelling, in declaration order.
            const ALL: &'static [($name, &'static str)] = &[$(($name::$variant, $text),)*];

            /// The spelling (upper case for keywords).
            pub fn text(self) -> &'static str {
                $name::ALL[self as usize].1
            }
        }
    };
}

spellings! {
    /// Reserved words of the language. Identifiers that match one of these (ignoring case)
    /// are keywords, which is why `c.select` still works: the parser accepts a keyword after a
    /// dot.
    Keyword {
        And = "AND",
        Array = "ARRAY",
        As = "AS",
        Asc = "ASC",
        Between = "BETWEEN",
        By = "BY",
        Desc = "DESC",
        Distinct = "DISTINCT",
        Escape = "ESCAPE",
        Exists = "EXISTS",
        False = "FALSE",
        From = "FROM",
        Group = "GROUP",
        In = "IN",
        Join = "JOIN",
        Like = "LIKE",
        Limit = "LIMIT",
        Not = "NOT",
        Null = "NULL",
        Offset = "OFFSET",
        Or = "OR",
        Order = "ORDER",
        Select = "SELECT",
        Top = "TOP",
        True = "TRUE",
        Undefined = "UNDEFINED",
        Value = "VALUE",
        Where = "WHERE",
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Keyword(Keyword),
    /// A name as written (identifiers are case-sensitive).
    Identifier(String),
    /// `@name`, stored without the `@`.
    Parameter(String),
    Number(f64),
    String(String),
    /// An operator or punctuation, e.g. `>=`, `??`, `(`.
    Symbol(Symbol),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Spanned {
    pub token: Token,
    /// Offset in characters (not bytes) from the start of the query text.
    pub position: usize,
}

spellings! {
    /// Operators and punctuation, longest first so that `>>>` wins over `>>` and `>`.
    Symbol {
        ShiftRightZeroFill = ">>>",
        ShiftLeft = "<<",
        ShiftRight = ">>",
        LessOrEqual = "<=",
        GreaterOrEqual = ">=",
        BangEqual = "!=",
        LessGreater = "<>",
        DoublePipe = "||",
        DoubleQuestion = "??",
        OpenParenthesis = "(",
        CloseParenthesis = ")",
        OpenBracket = "[",
        CloseBracket = "]",
        OpenBrace = "{",
        CloseBrace = "}",
        Comma = ",",
        Period = ".",
        Colon = ":",
        Question = "?",
        Plus = "+",
        Minus = "-",
        Star = "*",
        Slash = "/",
        Percent = "%",
        Equal = "=",
        Less = "<",
        Greater = ">",
        Ampersand = "&",
        Pipe = "|",
        Caret = "^",
        Tilde = "~",
    }
}

pub fn tokenize(text: &str) -> Result<Vec<Spanned>, QueryError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        let character = chars[index];
        if character.is_whitespace() {
            index += 1;
            continue;
        }
        // `--` starts a comment that runs to the end of the line, as in the service.
        if character == '-' && chars.get(index + 1) == Some(&'-') {
            while index < chars.len() && chars[index] != '\n' {
                index += 1;
            }
            continue;
        }
        let (token, end) = lex_token(&chars, index)?;
        tokens.push(Spanned {
            token,
            position: index,
        });
        index = end;
    }
    Ok(tokens)
}

/// The token that starts at `start`, chosen by its first character, and the offset after it.
fn lex_token(chars: &[char], start: usize) -> Result<(Token, usize), QueryError> {
    let character = chars[start];
    if character.is_ascii_alphabetic() || character == '_' {
        Ok(lex_word(chars, start))
    } else if character == '@' {
        lex_parameter(chars, start)
    } else if character.is_ascii_digit()
        || (character == '.' && chars.get(start + 1).is_some_and(char::is_ascii_digit))
    {
        let (number, end) = lex_number(chars, start)?;
        Ok((Token::Number(number), end))
    } else if character == '"' || character == '\'' {
        let (string, end) = lex_string(chars, start)?;
        Ok((Token::String(string), end))
    } else {
        lex_symbol(chars, start)
    }
}

/// The offset after the letters, digits and underscores that start at `from`.
fn word_end(chars: &[char], from: usize) -> usize {
    let mut index = from;
    while index < chars.len() && (chars[index].is_ascii_alphanumeric() || chars[index] == '_') {
        index += 1;
    }
    index
}

/// A keyword (matched ignoring case) or an identifier.
fn lex_word(chars: &[char], start: usize) -> (Token, usize) {
    let end = word_end(chars, start);
    let word: String = chars[start..end].iter().collect();
    let token = match Keyword::ALL
        .iter()
        .find(|(_, text)| text.eq_ignore_ascii_case(&word))
    {
        Some((keyword, _)) => Token::Keyword(*keyword),
        None => Token::Identifier(word),
    };
    (token, end)
}

/// `@name`; a lone `@` is a syntax error.
fn lex_parameter(chars: &[char], start: usize) -> Result<(Token, usize), QueryError> {
    let end = word_end(chars, start + 1);
    if end == start + 1 {
        return Err(syntax_error(chars, start));
    }
    let name: String = chars[start + 1..end].iter().collect();
    Ok((Token::Parameter(name), end))
}

/// The longest operator or punctuation spelt at `start`.
fn lex_symbol(chars: &[char], start: usize) -> Result<(Token, usize), QueryError> {
    let symbol = Symbol::ALL.iter().find(|(_, text)| {
        text.chars()
            .enumerate()
            .all(|(offset, expected)| chars.get(start + offset) == Some(&expected))
    });
    match symbol {
        Some((symbol, _)) => Ok((
            Token::Symbol(*symbol),
            start + symbol.text().chars().count(),
        )),
        None => Err(syntax_error(chars, start)),
    }
}

fn syntax_error(chars: &[char], position: usize) -> QueryError {
    let near: String = chars[position.min(chars.len())..]
        .iter()
        .take_while(|c| !c.is_whitespace())
        .take(20)
        .collect();
    QueryError::Syntax { near, position }
}

/// Decimal numbers with optional fraction and exponent, and `0x` hexadecimal integers.
fn lex_number(chars: &[char], start: usize) -> Result<(f64, usize), QueryError> {
    let mut index = start;
    if chars[index] == '0' && matches!(chars.get(index + 1), Some('x' | 'X')) {
        index += 2;
        let digits_start = index;
        while index < chars.len() && chars[index].is_ascii_hexdigit() {
            index += 1;
        }
        let digits: String = chars[digits_start..index].iter().collect();
        let value = u64::from_str_radix(&digits, 16).map_err(|_| syntax_error(chars, start))?;
        return Ok((value as f64, index));
    }
    while index < chars.len() && chars[index].is_ascii_digit() {
        index += 1;
    }
    if chars.get(index) == Some(&'.') && chars.get(index + 1).is_some_and(char::is_ascii_digit) {
        index += 1;
        while index < chars.len() && chars[index].is_ascii_digit() {
            index += 1;
        }
    }
    if matches!(chars.get(index), Some('e' | 'E')) {
        let mut lookahead = index + 1;
        if matches!(chars.get(lookahead), Some('+' | '-')) {
            lookahead += 1;
        }
        if chars.get(lookahead).is_some_and(char::is_ascii_digit) {
            index = lookahead;
            while index < chars.len() && chars[index].is_ascii_digit() {
                index += 1;
            }
        }
    }
    let text: String = chars[start..index].iter().collect();
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() => Ok((value, index)),
        _ => Err(syntax_error(chars, start)),
    }
}

/// Single- or double-quoted strings with JSON escapes (plus `\'`).
fn lex_string(chars: &[char], start: usize) -> Result<(String, usize), QueryError> {
    let quote = chars[start];
    let mut index = start + 1;
    let mut out = String::new();
    loop {
        let Some(&character) = chars.get(index) else {
            return Err(syntax_error(chars, start));
        };
        index += 1;
        if character == quote {
            return Ok((out, index));
        }
        if character != '\\' {
            out.push(character);
            continue;
        }
        let Some(&escape) = chars.get(index) else {
            return Err(syntax_error(chars, start));
        };
        index += 1;
        match escape {
            '"' => out.push('"'),
            '\'' => out.push('\''),
            '\\' => out.push('\\'),
            '/' => out.push('/'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'u' => {
                let high = hex4(chars, index).ok_or_else(|| syntax_error(chars, index - 2))?;
                index += 4;
                let code = if (0xD800..0xDC00).contains(&high) {
                    // A surrogate pair spells one character outside the basic plane.
                    let low =
                        if chars.get(index) == Some(&'\\') && chars.get(index + 1) == Some(&'u') {
                            hex4(chars, index + 2)
                        } else {
                            None
                        };
                    match low {
                        Some(low) if (0xDC00..0xE000).contains(&low) => {
                            index += 6;
                            0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                        }
                        _ => return Err(syntax_error(chars, index - 6)),
                    }
                } else {
                    high
                };
                out.push(char::from_u32(code).ok_or_else(|| syntax_error(chars, index - 6))?);
            }
            _ => return Err(syntax_error(chars, index - 2)),
        }
    }
}

fn hex4(chars: &[char], index: usize) -> Option<u32> {
    let digits: String = chars.get(index..index + 4)?.iter().collect();
    if digits.chars().all(|c| c.is_ascii_hexdigit()) {
        u32::from_str_radix(&digits, 16).ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Token> {
        tokenize(text)
            .map(|tokens| tokens.into_iter().map(|t| t.token).collect())
            .unwrap_or_default()
    }

    #[test]
    fn keywords_are_case_insensitive_and_identifiers_keep_case() {
        assert_eq!(
            kinds("select C.Name from c"),
            vec![
                Token::Keyword(Keyword::Select),
                Token::Identifier("C".into()),
                Token::Symbol(Symbol::Period),
                Token::Identifier("Name".into()),
                Token::Keyword(Keyword::From),
                Token::Identifier("c".into()),
            ]
        );
    }

    #[test]
    fn numbers_strings_parameters_and_operators() {
        assert_eq!(
            kinds("1.5e2 0x1F 'it\\'s' \"\\u00e9\" @p >>> ?? != <> --comment\n."),
            vec![
                Token::Number(150.0),
                Token::Number(31.0),
                Token::String("it's".into()),
                Token::String("é".into()),
                Token::Parameter("p".into()),
                Token::Symbol(Symbol::ShiftRightZeroFill),
                Token::Symbol(Symbol::DoubleQuestion),
                Token::Symbol(Symbol::BangEqual),
                Token::Symbol(Symbol::LessGreater),
                Token::Symbol(Symbol::Period),
            ]
        );
    }

    #[test]
    fn every_keyword_and_symbol_lexes_to_itself() {
        for (keyword, text) in Keyword::ALL {
            assert_eq!(keyword.text(), *text);
            assert_eq!(kinds(&text.to_lowercase()), vec![Token::Keyword(*keyword)]);
        }
        for (symbol, text) in Symbol::ALL {
            assert_eq!(symbol.text(), *text);
            assert_eq!(kinds(text), vec![Token::Symbol(*symbol)]);
        }
    }

    #[test]
    fn surrogate_pairs_decode_to_one_character() {
        assert_eq!(
            kinds("\"\\ud83d\\ude00\""),
            vec![Token::String("😀".into())]
        );
    }

    #[test]
    fn errors_name_the_position() {
        assert_eq!(
            tokenize("SELECT # FROM c"),
            Err(QueryError::Syntax {
                near: "#".into(),
                position: 7
            })
        );
        assert!(matches!(
            tokenize("'open"),
            Err(QueryError::Syntax { position: 0, .. })
        ));
        assert!(matches!(tokenize("@"), Err(QueryError::Syntax { .. })));
        assert!(matches!(
            tokenize("'\\ud800'"),
            Err(QueryError::Syntax { .. })
        ));
    }

    #[test]
    fn positions_count_characters_not_bytes() {
        let tokens = tokenize("'é' x").unwrap_or_default();
        assert_eq!(tokens.get(1).map(|t| t.position), Some(4));
    }
}
