//! Matching for the LIKE operator: `%` is any run of characters, `_` any one character,
//! `[abc]`, `[a-f]` and `[^abc]` a character class, and an optional escape character makes the
//! next pattern character literal. Matching is case-sensitive, as in the service.
//!
//! It works on characters, not bytes, and runs in O(text × pattern) time without recursion,
//! so no pattern can blow the stack or run away.

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    AnyRun,
    AnyOne,
    Literal(char),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

fn compile(pattern: &str, escape: Option<char>) -> Vec<Piece> {
    let characters: Vec<char> = pattern.chars().collect();
    let mut pieces = Vec::new();
    let mut index = 0;
    while index < characters.len() {
        let character = characters[index];
        index += 1;
        if Some(character) == escape {
            // A trailing escape character stands for itself.
            let literal = characters.get(index).copied().unwrap_or(character);
            index += 1;
            pieces.push(Piece::Literal(literal));
            continue;
        }
        match character {
            '%' => pieces.push(Piece::AnyRun),
            '_' => pieces.push(Piece::AnyOne),
            '[' => {
                // A class runs to the next `]`; without one the `[` is literal.
                let Some(close) = characters[index..].iter().position(|c| *c == ']') else {
                    pieces.push(Piece::Literal('['));
                    continue;
                };
                let mut body = &characters[index..index + close];
                index += close + 1;
                let negated = body.first() == Some(&'^');
                if negated {
                    body = &body[1..];
                }
                let mut ranges = Vec::new();
                let mut position = 0;
                while position < body.len() {
                    if position + 2 < body.len() && body[position + 1] == '-' {
                        ranges.push((body[position], body[position + 2]));
                        position += 3;
                    } else {
                        ranges.push((body[position], body[position]));
                        position += 1;
                    }
                }
                pieces.push(Piece::Class { negated, ranges });
            }
            other => pieces.push(Piece::Literal(other)),
        }
    }
    pieces
}

fn piece_matches(piece: &Piece, character: char) -> bool {
    match piece {
        Piece::AnyRun | Piece::AnyOne => true,
        Piece::Literal(expected) => *expected == character,
        Piece::Class { negated, ranges } => {
            ranges
                .iter()
                .any(|(low, high)| (*low..=*high).contains(&character))
                != *negated
        }
    }
}

/// A LIKE pattern compiled once, for patterns known at prepare time.
#[derive(Debug, Clone, PartialEq)]
pub struct LikePattern {
    pieces: Vec<Piece>,
}

impl LikePattern {
    pub fn new(pattern: &str, escape: Option<char>) -> LikePattern {
        LikePattern {
            pieces: compile(pattern, escape),
        }
    }

    pub fn matches(&self, text: &str) -> bool {
        matches_pieces(text, &self.pieces)
    }
}

pub fn matches(text: &str, pattern: &str, escape: Option<char>) -> bool {
    matches_pieces(text, &compile(pattern, escape))
}

fn matches_pieces(text: &str, pieces: &[Piece]) -> bool {
    let text: Vec<char> = text.chars().collect();
    // reachable[i] is true when the pieces seen so far can consume exactly text[..i].
    let mut reachable = vec![false; text.len() + 1];
    reachable[0] = true;
    for piece in pieces {
        let mut next = vec![false; text.len() + 1];
        match piece {
            Piece::AnyRun => {
                let mut seen = false;
                for position in 0..=text.len() {
                    seen |= reachable[position];
                    next[position] = seen;
                }
            }
            _ => {
                for position in 0..text.len() {
                    if reachable[position] && piece_matches(piece, text[position]) {
                        next[position + 1] = true;
                    }
                }
            }
        }
        reachable = next;
    }
    reachable[text.len()]
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn wildcards_classes_and_escapes() {
        assert!(matches("apple", "a%", None));
        assert!(matches("apple", "%pl%", None));
        assert!(!matches("apple", "A%", None));
        assert!(matches("apple", "_pple", None));
        assert!(!matches("apple", "_ple", None));
        assert!(matches("apple", "[a-c]pple", None));
        assert!(matches("apple", "[^b]pple", None));
        assert!(!matches("apple", "[^a]pple", None));
        assert!(matches("50%", "50!%", Some('!')));
        assert!(!matches("500", "50!%", Some('!')));
        assert!(matches("", "%", None));
        assert!(!matches("", "_", None));
        assert!(matches("[x", "[x", None));
        assert!(matches("é", "_", None));
    }
}
