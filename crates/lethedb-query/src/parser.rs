//! A hand-written recursive-descent parser from tokens to `ast::Query`.
//!
//! It checks only the shape of the text: names of functions, identifiers in scope and
//! parameters are resolved later by `plan.rs`. Named limits keep hostile input from
//! exhausting memory or the stack: `QUERY_TEXT_CHARS_MAX`, `EXPRESSION_DEPTH_MAX` (the height
//! of any expression tree, subqueries included), `PARSER_RECURSION_MAX` (the nesting of the
//! parser's own calls) and `JOINS_MAX`.
//!
//! Grammar (keywords are case-insensitive; lowest precedence first). The binary levels from
//! `or` to `multiplicative` are parsed by one precedence-climbing loop (`Parser::binary`).
//!
//! ```text
//! query          := SELECT [DISTINCT] [TOP count] projection
//!                   [FROM source (JOIN source)*] [WHERE expr]
//!                   [GROUP BY expr (',' expr)*]
//!                   [ORDER BY expr [ASC|DESC] (',' expr [ASC|DESC])* | ORDER BY RANK expr]
//!                   [OFFSET count LIMIT count]
//! count          := number | @parameter
//! projection     := '*' | VALUE expr | expr [[AS] name] (',' expr [[AS] name])*
//! source         := name IN collection | collection [[AS] name]
//! collection     := name ('.' name | '[' expr ']')* | '(' query ')'
//! expr           := coalesce ['?' expr ':' expr]
//! coalesce       := or ['??' coalesce]
//! or             := and (OR and)*
//! and            := not (AND not)*
//! not            := NOT not | predicate
//! predicate      := concat [[NOT] IN '(' expr (',' expr)* ')'
//!                          | [NOT] BETWEEN concat AND concat
//!                          | [NOT] LIKE concat [ESCAPE concat]]
//! concat         := bit_or ('||' bit_or)*
//! bit_or         := bit_xor ('|' bit_xor)*
//! bit_xor        := bit_and ('^' bit_and)*
//! bit_and        := equality ('&' equality)*
//! equality       := relational (('=' | '!=' | '<>') relational)*
//! relational     := shift (('<' | '<=' | '>' | '>=') shift)*
//! shift          := additive (('<<' | '>>' | '>>>') additive)*
//! additive       := multiplicative (('+' | '-') multiplicative)*
//! multiplicative := unary (('*' | '/' | '%') unary)*
//! unary          := ('-' | '+' | '~') unary | postfix
//! postfix        := primary ('.' name | '[' expr ']')*
//! primary        := number | string | true | false | null | undefined | @parameter
//!                 | name | name '(' [expr (',' expr)*] ')'
//!                 | '[' [expr (',' expr)*] ']' | '{' [key ':' expr (',' key ':' expr)*] '}'
//!                 | '(' expr ')' | '(' query ')' | EXISTS '(' query ')' | ARRAY '(' query ')'
//! key            := name | string
//! ```

use serde_json::Value;

use crate::ast::{
    expression_height, BinaryOp, Expr, From, OffsetLimit, Projection, Query, Select, SelectItem,
    SortKey, Source, UnaryOp,
};
use crate::builtins::Builtin;
use crate::error::QueryError;
use crate::lexer::{tokenize, Keyword, Spanned, Symbol, Token};
use crate::value::number_value;
use crate::vectors::{self, VECTOR_ORDER_REFUSAL};

/// The service's refusal of `ORDER BY RANK score ASC` or `DESC`.
pub(crate) const RANK_ORDER_REFUSAL: &str =
    "Specifying a sort order (ASC or DESC) in the ORDER BY RANK clause is not allowed.";

/// The longest query text accepted, in characters. The service's own limit is in this range;
/// anything longer is almost certainly not a hand-written query.
pub const QUERY_TEXT_CHARS_MAX: usize = 256 * 1024;

/// The deepest expression tree accepted (counting subqueries). Evaluation, `Display`, equality
/// and drop all recurse over the tree, so this number bounds their stack use; it is sized so
/// that even unoptimised builds parse and evaluate the deepest tree on a 2 MiB thread stack.
/// Chains of AND and OR are built balanced, so they hardly count against it.
pub const EXPRESSION_DEPTH_MAX: usize = 32;

/// The most operands one chain of AND or OR may have.
pub const LOGICAL_CHAIN_OPERANDS_MAX: usize = 10_000;

/// The deepest nesting of the parser's recursive calls (parentheses, brackets, arguments,
/// prefix operators, subqueries). `Display` writes at most two such levels per tree level, so
/// this leaves room for every displayed tree to parse back.
pub const PARSER_RECURSION_MAX: usize = 2 * EXPRESSION_DEPTH_MAX + 4;

/// The most JOINs one FROM clause may have: each multiplies the rows of a document.
pub const JOINS_MAX: usize = 16;

/// Precedence of OR, the loosest binary operator.
const LOWEST_PRECEDENCE: u8 = 1;
/// Precedence of NOT's operand and of IN, BETWEEN and LIKE: looser than comparisons and
/// string concatenation, tighter than AND.
const PREDICATE_PRECEDENCE: u8 = 3;

pub fn parse(text: &str) -> Result<Query, QueryError> {
    let chars_count = text.chars().count();
    if chars_count > QUERY_TEXT_CHARS_MAX {
        return Err(QueryError::LimitExceeded(format!(
            "the query text has {chars_count} characters; at most {QUERY_TEXT_CHARS_MAX} are allowed"
        )));
    }
    let tokens = tokenize(text)?;
    let mut parser = Parser {
        tokens,
        chars: text.chars().collect(),
        next: 0,
        depth: 0,
    };
    let query = parser.query()?;
    if parser.next < parser.tokens.len() {
        return Err(parser.error_here());
    }
    Ok(query)
}

struct Parser {
    tokens: Vec<Spanned>,
    chars: Vec<char>,
    next: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next).map(|spanned| &spanned.token)
    }

    fn peek_at(&self, ahead: usize) -> Option<&Token> {
        self.tokens
            .get(self.next + ahead)
            .map(|spanned| &spanned.token)
    }

    fn error_here(&self) -> QueryError {
        if let Some(spanned) = self.tokens.get(self.next) {
            let end = self
                .tokens
                .get(self.next + 1)
                .map_or(self.chars.len(), |following| following.position);
            let near: String = self.chars[spanned.position..end]
                .iter()
                .collect::<String>()
                .trim()
                .chars()
                .take(40)
                .collect();
            QueryError::Syntax {
                near,
                position: spanned.position,
            }
        } else {
            let near = self.tokens.last().map_or(String::new(), |last| {
                self.chars[last.position..]
                    .iter()
                    .collect::<String>()
                    .trim()
                    .chars()
                    .take(40)
                    .collect()
            });
            QueryError::Syntax {
                near,
                position: self.chars.len(),
            }
        }
    }

    fn is_keyword(&self, keyword: Keyword) -> bool {
        matches!(self.peek(), Some(Token::Keyword(found)) if *found == keyword)
    }

    fn is_symbol(&self, symbol: Symbol) -> bool {
        matches!(self.peek(), Some(Token::Symbol(found)) if *found == symbol)
    }

    fn eat_keyword(&mut self, keyword: Keyword) -> bool {
        let found = self.is_keyword(keyword);
        if found {
            self.next += 1;
        }
        found
    }

    fn eat_symbol(&mut self, symbol: Symbol) -> bool {
        let found = self.is_symbol(symbol);
        if found {
            self.next += 1;
        }
        found
    }

    fn expect_keyword(&mut self, keyword: Keyword) -> Result<(), QueryError> {
        if self.eat_keyword(keyword) {
            Ok(())
        } else {
            Err(self.error_here())
        }
    }

    fn expect_symbol(&mut self, symbol: Symbol) -> Result<(), QueryError> {
        if self.eat_symbol(symbol) {
            Ok(())
        } else {
            Err(self.error_here())
        }
    }

    fn identifier(&mut self) -> Result<String, QueryError> {
        match self.peek() {
            Some(Token::Identifier(name)) => {
                let name = name.clone();
                self.next += 1;
                Ok(name)
            }
            _ => Err(self.error_here()),
        }
    }

    /// A property name after a dot: keywords are allowed there (`c.value`), spelled as written.
    fn property_name(&mut self) -> Result<String, QueryError> {
        match self.tokens.get(self.next) {
            Some(Spanned {
                token: Token::Identifier(name),
                ..
            }) => {
                let name = name.clone();
                self.next += 1;
                Ok(name)
            }
            Some(Spanned {
                token: Token::Keyword(keyword),
                position,
            }) => {
                let name: String = self.chars[*position..*position + keyword.text().len()]
                    .iter()
                    .collect();
                self.next += 1;
                Ok(name)
            }
            _ => Err(self.error_here()),
        }
    }

    fn enter(&mut self) -> Result<(), QueryError> {
        self.depth += 1;
        if self.depth > PARSER_RECURSION_MAX {
            return Err(QueryError::LimitExceeded(format!(
                "the query nests deeper than {PARSER_RECURSION_MAX} levels"
            )));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Rejects a tree as soon as it grows too tall, before it is deep enough to overflow the
    /// stack of whatever recurses over it later (including its own drop).
    fn checked(&self, expr: Expr) -> Result<Expr, QueryError> {
        if expression_height(&expr) > EXPRESSION_DEPTH_MAX {
            return Err(QueryError::LimitExceeded(format!(
                "an expression is nested deeper than {EXPRESSION_DEPTH_MAX} levels"
            )));
        }
        Ok(expr)
    }

    fn query(&mut self) -> Result<Query, QueryError> {
        self.enter()?;
        let query = self.query_inner();
        self.leave();
        query
    }

    fn query_inner(&mut self) -> Result<Query, QueryError> {
        self.expect_keyword(Keyword::Select)?;
        let distinct = self.eat_keyword(Keyword::Distinct);
        let top = if self.eat_keyword(Keyword::Top) {
            Some(self.count()?)
        } else {
            None
        };
        let projection = if self.eat_symbol(Symbol::Star) {
            Projection::Star
        } else if self.eat_keyword(Keyword::Value) {
            Projection::Value(self.expr()?)
        } else {
            let mut items = Vec::new();
            loop {
                let expr = self.expr()?;
                let alias = if self.eat_keyword(Keyword::As)
                    || matches!(self.peek(), Some(Token::Identifier(_)))
                {
                    Some(self.identifier()?)
                } else {
                    None
                };
                items.push(SelectItem { expr, alias });
                if !self.eat_symbol(Symbol::Comma) {
                    break;
                }
            }
            Projection::Items(items)
        };
        let from = self.sources()?;
        let filter = if self.eat_keyword(Keyword::Where) {
            Some(self.expr()?)
        } else {
            None
        };
        let mut group_by = Vec::new();
        if self.eat_keyword(Keyword::Group) {
            self.expect_keyword(Keyword::By)?;
            loop {
                group_by.push(self.expr()?);
                if !self.eat_symbol(Symbol::Comma) {
                    break;
                }
            }
        }
        let (order_by, order_by_rank) = self.order_by()?;
        let offset_limit = if self.eat_keyword(Keyword::Offset) {
            let offset = self.count()?;
            self.expect_keyword(Keyword::Limit)?;
            let limit = self.count()?;
            Some(OffsetLimit { offset, limit })
        } else {
            None
        };
        Ok(Query {
            select: Select {
                distinct,
                top,
                projection,
            },
            from,
            filter,
            group_by,
            order_by,
            order_by_rank,
            offset_limit,
        })
    }

    /// `FROM source (JOIN source)*`, if the query has one.
    fn sources(&mut self) -> Result<Option<From>, QueryError> {
        if !self.eat_keyword(Keyword::From) {
            return Ok(None);
        }
        let source = self.source()?;
        let mut joins = Vec::new();
        while self.eat_keyword(Keyword::Join) {
            if joins.len() == JOINS_MAX {
                return Err(QueryError::LimitExceeded(format!(
                    "a FROM clause may have at most {JOINS_MAX} JOINs"
                )));
            }
            joins.push(self.source()?);
        }
        Ok(Some(From { source, joins }))
    }

    /// `ORDER BY key [ASC|DESC], ...` or `ORDER BY RANK score`, with the service's refusals of
    /// a direction written after a vector score or a rank.
    fn order_by(&mut self) -> Result<(Vec<SortKey>, bool), QueryError> {
        let mut order_by = Vec::new();
        if !self.eat_keyword(Keyword::Order) {
            return Ok((order_by, false));
        }
        self.expect_keyword(Keyword::By)?;
        // RANK is no keyword: it is a rank when a scoring expression follows it.
        let rank = matches!(self.peek(), Some(Token::Identifier(word)) if word.eq_ignore_ascii_case("rank"))
            && matches!(self.peek_at(1), Some(Token::Identifier(_)));
        if rank {
            self.next += 1;
            let expr = self.expr()?;
            if self.eat_keyword(Keyword::Desc) || self.eat_keyword(Keyword::Asc) {
                return Err(QueryError::semantic(RANK_ORDER_REFUSAL));
            }
            order_by.push(SortKey {
                expr,
                descending: true,
            });
            return Ok((order_by, true));
        }
        loop {
            let expr = self.expr()?;
            let descending = self.eat_keyword(Keyword::Desc);
            let ascending = !descending && self.eat_keyword(Keyword::Asc);
            if (descending || ascending) && vectors::is_vector_distance(&expr) {
                return Err(QueryError::semantic(VECTOR_ORDER_REFUSAL));
            }
            order_by.push(SortKey { expr, descending });
            if !self.eat_symbol(Symbol::Comma) {
                return Ok((order_by, false));
            }
        }
    }

    /// `TOP`, `OFFSET` and `LIMIT` take a number literal or a parameter, nothing else.
    fn count(&mut self) -> Result<Expr, QueryError> {
        match self.peek() {
            Some(Token::Number(number)) => {
                let value = number_value(*number).unwrap_or(Value::Null);
                self.next += 1;
                Ok(Expr::Literal(value))
            }
            Some(Token::Parameter(name)) => {
                let name = name.clone();
                self.next += 1;
                Ok(Expr::Parameter(name))
            }
            _ => Err(self.error_here()),
        }
    }

    fn source(&mut self) -> Result<Source, QueryError> {
        if matches!(self.peek(), Some(Token::Identifier(_)))
            && matches!(self.peek_at(1), Some(Token::Keyword(Keyword::In)))
        {
            let alias = self.identifier()?;
            self.expect_keyword(Keyword::In)?;
            let collection = self.collection()?;
            return Ok(Source::Iterate { alias, collection });
        }
        let collection = self.collection()?;
        let alias =
            if self.eat_keyword(Keyword::As) || matches!(self.peek(), Some(Token::Identifier(_))) {
                Some(self.identifier()?)
            } else {
                None
            };
        Ok(Source::Bind { collection, alias })
    }

    fn collection(&mut self) -> Result<Expr, QueryError> {
        if self.is_symbol(Symbol::OpenParenthesis)
            && matches!(self.peek_at(1), Some(Token::Keyword(Keyword::Select)))
        {
            self.next += 1;
            let query = self.query()?;
            self.expect_symbol(Symbol::CloseParenthesis)?;
            return self.checked(Expr::Subquery(Box::new(query)));
        }
        let mut expr = Expr::Identifier(self.identifier()?);
        loop {
            if self.eat_symbol(Symbol::Period) {
                expr = Expr::Property(Box::new(expr), self.property_name()?);
            } else if self.eat_symbol(Symbol::OpenBracket) {
                let index = self.nested_expr()?;
                self.expect_symbol(Symbol::CloseBracket)?;
                expr = Expr::Index(Box::new(expr), Box::new(index));
            } else {
                break;
            }
            expr = self.checked(expr)?;
        }
        Ok(expr)
    }

    /// An expression in a new nesting level: parentheses, brackets, arguments.
    fn nested_expr(&mut self) -> Result<Expr, QueryError> {
        self.enter()?;
        let expr = self.expr();
        self.leave();
        expr
    }

    fn expr(&mut self) -> Result<Expr, QueryError> {
        let condition = self.coalesce()?;
        if self.eat_symbol(Symbol::Question) {
            let if_true = self.nested_expr()?;
            self.expect_symbol(Symbol::Colon)?;
            let if_false = self.nested_expr()?;
            return self.checked(Expr::Conditional(
                Box::new(condition),
                Box::new(if_true),
                Box::new(if_false),
            ));
        }
        Ok(condition)
    }

    fn coalesce(&mut self) -> Result<Expr, QueryError> {
        let left = self.binary(LOWEST_PRECEDENCE)?;
        if self.eat_symbol(Symbol::DoubleQuestion) {
            self.enter()?;
            let right = self.coalesce();
            self.leave();
            return self.checked(Expr::Binary(
                BinaryOp::Coalesce,
                Box::new(left),
                Box::new(right?),
            ));
        }
        Ok(left)
    }

    /// The binary operator at the cursor and its precedence, if any.
    fn binary_operator(&self) -> Option<(u8, BinaryOp)> {
        let found = match self.peek()? {
            Token::Keyword(Keyword::Or) => (1, BinaryOp::Or),
            Token::Keyword(Keyword::And) => (2, BinaryOp::And),
            Token::Symbol(symbol) => match *symbol {
                Symbol::DoublePipe => (4, BinaryOp::Concat),
                Symbol::Pipe => (5, BinaryOp::BitOr),
                Symbol::Caret => (6, BinaryOp::BitXor),
                Symbol::Ampersand => (7, BinaryOp::BitAnd),
                Symbol::Equal => (8, BinaryOp::Equal),
                Symbol::BangEqual | Symbol::LessGreater => (8, BinaryOp::NotEqual),
                Symbol::Less => (9, BinaryOp::Less),
                Symbol::LessOrEqual => (9, BinaryOp::LessOrEqual),
                Symbol::Greater => (9, BinaryOp::Greater),
                Symbol::GreaterOrEqual => (9, BinaryOp::GreaterOrEqual),
                Symbol::ShiftLeft => (10, BinaryOp::ShiftLeft),
                Symbol::ShiftRight => (10, BinaryOp::ShiftRight),
                Symbol::ShiftRightZeroFill => (10, BinaryOp::ShiftRightZeroFill),
                Symbol::Plus => (11, BinaryOp::Add),
                Symbol::Minus => (11, BinaryOp::Subtract),
                Symbol::Star | Symbol::Slash | Symbol::Percent => (
                    12,
                    match *symbol {
                        Symbol::Star => BinaryOp::Multiply,
                        Symbol::Slash => BinaryOp::Divide,
                        _ => BinaryOp::Modulo,
                    },
                ),
                _ => return None,
            },
            _ => return None,
        };
        Some(found)
    }

    /// Precedence climbing over every binary operator from OR up to `*`, with NOT and the
    /// IN/BETWEEN/LIKE predicates at `PREDICATE_PRECEDENCE`. One function instead of one per
    /// level keeps the stack shallow for each level of parentheses.
    fn binary(&mut self, lowest: u8) -> Result<Expr, QueryError> {
        let mut left = if self.is_keyword(Keyword::Not) {
            self.next += 1;
            self.enter()?;
            let operand = self.binary(PREDICATE_PRECEDENCE);
            self.leave();
            self.checked(Expr::Unary(UnaryOp::Not, Box::new(operand?)))?
        } else {
            self.unary()?
        };
        loop {
            let negated = self.is_keyword(Keyword::Not)
                && matches!(
                    self.peek_at(1),
                    Some(Token::Keyword(
                        Keyword::In | Keyword::Between | Keyword::Like
                    ))
                );
            let is_predicate = negated
                || self.is_keyword(Keyword::In)
                || self.is_keyword(Keyword::Between)
                || self.is_keyword(Keyword::Like);
            if is_predicate {
                if PREDICATE_PRECEDENCE < lowest {
                    return Ok(left);
                }
                if negated {
                    self.next += 1;
                }
                left = self.predicate(left, negated)?;
                continue;
            }
            let Some((precedence, op)) = self.binary_operator() else {
                return Ok(left);
            };
            if precedence < lowest {
                return Ok(left);
            }
            self.next += 1;
            if matches!(op, BinaryOp::And | BinaryOp::Or) {
                // A chain of ANDs (or ORs) becomes a balanced tree: both are associative in
                // three-valued logic and still evaluate left to right, and a balanced tree
                // keeps long generated filters far below the height limit.
                let mut operands = vec![left, self.binary(precedence + 1)?];
                while self.binary_operator().is_some_and(|(_, next)| next == op) {
                    self.next += 1;
                    if operands.len() >= LOGICAL_CHAIN_OPERANDS_MAX {
                        return Err(QueryError::LimitExceeded(format!(
                            "a chain of {} has more than {LOGICAL_CHAIN_OPERANDS_MAX} operands",
                            op.symbol()
                        )));
                    }
                    operands.push(self.binary(precedence + 1)?);
                }
                left = self.checked(balanced(op, operands))?;
                continue;
            }
            let right = self.binary(precedence + 1)?;
            left = self.checked(Expr::Binary(op, Box::new(left), Box::new(right)))?;
        }
    }

    /// The rest of `expr [NOT] IN (...)`, `BETWEEN low AND high` or `LIKE pattern [ESCAPE e]`.
    fn predicate(&mut self, expr: Expr, negated: bool) -> Result<Expr, QueryError> {
        let operand_precedence = PREDICATE_PRECEDENCE + 1;
        if self.eat_keyword(Keyword::In) {
            self.expect_symbol(Symbol::OpenParenthesis)?;
            let mut list = Vec::new();
            loop {
                list.push(self.nested_expr()?);
                if !self.eat_symbol(Symbol::Comma) {
                    break;
                }
            }
            self.expect_symbol(Symbol::CloseParenthesis)?;
            return self.checked(Expr::In {
                expr: Box::new(expr),
                list,
                negated,
            });
        }
        if self.eat_keyword(Keyword::Between) {
            let low = self.binary(operand_precedence)?;
            self.expect_keyword(Keyword::And)?;
            let high = self.binary(operand_precedence)?;
            return self.checked(Expr::Between {
                expr: Box::new(expr),
                low: Box::new(low),
                high: Box::new(high),
                negated,
            });
        }
        self.expect_keyword(Keyword::Like)?;
        let pattern = self.binary(operand_precedence)?;
        let escape = if self.eat_keyword(Keyword::Escape) {
            Some(Box::new(self.binary(operand_precedence)?))
        } else {
            None
        };
        self.checked(Expr::Like {
            expr: Box::new(expr),
            pattern: Box::new(pattern),
            escape,
            negated,
        })
    }

    fn unary(&mut self) -> Result<Expr, QueryError> {
        let op = match self.peek() {
            Some(Token::Symbol(Symbol::Minus)) => UnaryOp::Negate,
            Some(Token::Symbol(Symbol::Plus)) => UnaryOp::Plus,
            Some(Token::Symbol(Symbol::Tilde)) => UnaryOp::BitNot,
            _ => return self.postfix(),
        };
        self.next += 1;
        self.enter()?;
        let operand = self.unary();
        self.leave();
        let operand = operand?;
        // A minus in front of a number literal is part of the literal, so `-1` and the
        // displayed `(-1)` parse to the same tree.
        if op == UnaryOp::Negate {
            if let Expr::Literal(Value::Number(number)) = &operand {
                if let Some(negated) = number.as_f64().and_then(|n| number_value(-n)) {
                    return Ok(Expr::Literal(negated));
                }
            }
        }
        self.checked(Expr::Unary(op, Box::new(operand)))
    }

    fn postfix(&mut self) -> Result<Expr, QueryError> {
        let mut expr = self.primary()?;
        loop {
            if self.eat_symbol(Symbol::Period) {
                expr = Expr::Property(Box::new(expr), self.property_name()?);
            } else if self.eat_symbol(Symbol::OpenBracket) {
                let index = self.nested_expr()?;
                self.expect_symbol(Symbol::CloseBracket)?;
                expr = Expr::Index(Box::new(expr), Box::new(index));
            } else {
                return Ok(expr);
            }
            expr = self.checked(expr)?;
        }
    }

    fn subquery_in_parentheses(&mut self) -> Result<Query, QueryError> {
        self.expect_symbol(Symbol::OpenParenthesis)?;
        let query = self.query()?;
        self.expect_symbol(Symbol::CloseParenthesis)?;
        Ok(query)
    }

    fn expr_list(&mut self, close: Symbol) -> Result<Vec<Expr>, QueryError> {
        let mut items = Vec::new();
        if self.eat_symbol(close) {
            return Ok(items);
        }
        loop {
            items.push(self.nested_expr()?);
            if self.eat_symbol(close) {
                return Ok(items);
            }
            self.expect_symbol(Symbol::Comma)?;
        }
    }

    fn primary(&mut self) -> Result<Expr, QueryError> {
        let Some(token) = self.peek().cloned() else {
            return Err(self.error_here());
        };
        match token {
            Token::Number(number) => {
                self.next += 1;
                number_value(number)
                    .map(Expr::Literal)
                    .ok_or_else(|| self.error_here())
            }
            Token::String(text) => {
                self.next += 1;
                Ok(Expr::Literal(Value::String(text)))
            }
            Token::Parameter(name) => {
                self.next += 1;
                Ok(Expr::Parameter(name))
            }
            Token::Keyword(Keyword::True) => {
                self.next += 1;
                Ok(Expr::Literal(Value::Bool(true)))
            }
            Token::Keyword(Keyword::False) => {
                self.next += 1;
                Ok(Expr::Literal(Value::Bool(false)))
            }
            Token::Keyword(Keyword::Null) => {
                self.next += 1;
                Ok(Expr::Literal(Value::Null))
            }
            Token::Keyword(Keyword::Undefined) => {
                self.next += 1;
                Ok(Expr::Undefined)
            }
            Token::Keyword(Keyword::Exists) => {
                self.next += 1;
                let query = self.subquery_in_parentheses()?;
                self.checked(Expr::Exists(Box::new(query)))
            }
            Token::Keyword(Keyword::Array) => {
                self.next += 1;
                let query = self.subquery_in_parentheses()?;
                self.checked(Expr::ArrayQuery(Box::new(query)))
            }
            Token::Identifier(name) => {
                self.next += 1;
                if self.eat_symbol(Symbol::OpenParenthesis) {
                    self.enter()?;
                    let args = self.expr_list(Symbol::CloseParenthesis);
                    self.leave();
                    let builtin = Builtin::lookup(&name);
                    return self.checked(Expr::Call {
                        name,
                        args: args?,
                        builtin,
                    });
                }
                // `udf.name(...)` calls a user-defined function; whether one by that name exists
                // is the planner's question, asked of the caller's UDF host.
                if name.eq_ignore_ascii_case("udf")
                    && self.is_symbol(Symbol::Period)
                    && matches!(
                        self.peek_at(2),
                        Some(Token::Symbol(Symbol::OpenParenthesis))
                    )
                {
                    if let Some(Token::Identifier(function)) = self.peek_at(1) {
                        let function = function.clone();
                        self.next += 3;
                        self.enter()?;
                        let args = self.expr_list(Symbol::CloseParenthesis);
                        self.leave();
                        return self.checked(Expr::UdfCall {
                            name: function,
                            args: args?,
                        });
                    }
                }
                Ok(Expr::Identifier(name))
            }
            Token::Symbol(Symbol::OpenParenthesis) => {
                self.next += 1;
                if self.is_keyword(Keyword::Select) {
                    let query = self.query()?;
                    self.expect_symbol(Symbol::CloseParenthesis)?;
                    return self.checked(Expr::Subquery(Box::new(query)));
                }
                let expr = self.nested_expr()?;
                self.expect_symbol(Symbol::CloseParenthesis)?;
                Ok(expr)
            }
            Token::Symbol(Symbol::OpenBracket) => {
                self.next += 1;
                self.enter()?;
                let items = self.expr_list(Symbol::CloseBracket);
                self.leave();
                self.checked(Expr::Array(items?))
            }
            Token::Symbol(Symbol::OpenBrace) => {
                self.next += 1;
                self.enter()?;
                let fields = self.object_fields();
                self.leave();
                self.checked(Expr::Object(fields?))
            }
            _ => Err(self.error_here()),
        }
    }

    fn object_fields(&mut self) -> Result<Vec<(String, Expr)>, QueryError> {
        let mut fields = Vec::new();
        if self.eat_symbol(Symbol::CloseBrace) {
            return Ok(fields);
        }
        loop {
            let name = match self.peek() {
                Some(Token::String(text)) => {
                    let text = text.clone();
                    self.next += 1;
                    text
                }
                _ => self.property_name()?,
            };
            self.expect_symbol(Symbol::Colon)?;
            fields.push((name, self.nested_expr()?));
            if self.eat_symbol(Symbol::CloseBrace) {
                return Ok(fields);
            }
            self.expect_symbol(Symbol::Comma)?;
        }
    }
}

/// Joins operands with `op` into a balanced tree, keeping their order.
fn balanced(op: BinaryOp, mut operands: Vec<Expr>) -> Expr {
    if operands.len() <= 1 {
        return operands.pop().unwrap_or(Expr::Undefined);
    }
    let right = operands.split_off(operands.len() / 2);
    Expr::Binary(
        op,
        Box::new(balanced(op, operands)),
        Box::new(balanced(op, right)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) {
        let first = parse(text).unwrap_or_else(|error| panic!("{text}: {error}"));
        let displayed = first.to_string();
        let second = parse(&displayed).unwrap_or_else(|error| panic!("{displayed}: {error}"));
        assert_eq!(first, second, "{text} displayed as {displayed}");
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "SELECT * FROM c",
            "SELECT DISTINCT TOP 5 VALUE c.name FROM root c WHERE c.age > 3 ORDER BY c.name DESC",
            "SELECT c.a AS x, c['b c'] y, c.arr[0], -1, - -2, 1 - -3 FROM c",
            "SELECT VALUE {a: 1, 'b': [1, 2, {c: null}], \"c\": undefined} FROM c",
            "SELECT * FROM c JOIN t IN c.tags JOIN (SELECT VALUE x FROM x IN c.xs) y WHERE t = 'a'",
            "SELECT * FROM t IN c.tags",
            "SELECT * FROM c.children[0] AS child",
            "SELECT c.a FROM c WHERE NOT c.a IN (1, 2) AND c.b NOT IN ('x') OR c.c BETWEEN 1 AND 1 + 2",
            "SELECT c.a FROM c WHERE c.name LIKE '%a!_' ESCAPE '!' AND c.x NOT LIKE 'b%'",
            "SELECT c.a ?? c.b ?? 3, c.ok ? 'y' : 'n', 'a' || 'b' || c.s FROM c",
            "SELECT 1 | 2 ^ 3 & 4 << 1 >> 2 >>> 1, ~5, 7 % 3 * 2 / 1, 1 = 1 != 2 <> 3 < 4 <= 5 > 6 >= 7",
            "SELECT EXISTS(SELECT VALUE t FROM t IN c.tags), ARRAY(SELECT VALUE t FROM t IN c.tags), (SELECT VALUE COUNT(1) FROM t IN c.tags) FROM c",
            "SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g",
            "SELECT * FROM c ORDER BY c.a, c.b DESC OFFSET @o LIMIT 10",
            "SELECT TOP @n c.select, c.value FROM c WHERE c.x = @p",
            "SELECT 1.5e300, 0.1, 'quote\"s', '\\u00e9\\n' FROM c",
            "SELECT VALUE 1",
            "SELECT NOT NOT true, -(1 + 2), +c.x FROM c",
        ] {
            round_trip(text);
        }
    }

    #[test]
    fn precedence_follows_the_grammar() {
        let Ok(query) = parse("SELECT VALUE 1 + 2 * 3 = 7 AND true OR false") else {
            panic!("parse failed");
        };
        assert_eq!(
            query.to_string(),
            "SELECT VALUE ((((1 + (2 * 3)) = 7) AND true) OR false)"
        );
        let Ok(chain) = parse("SELECT VALUE a OR b OR c OR d OR e AND f AND g") else {
            panic!("parse failed");
        };
        assert_eq!(
            chain.to_string(),
            "SELECT VALUE ((a OR b) OR (c OR (d OR (e AND (f AND g)))))"
        );
        let long = format!(
            "SELECT * FROM c WHERE c.x = 0{}",
            (1..5000)
                .map(|n| format!(" OR c.x = {n}"))
                .collect::<String>()
        );
        round_trip(&long);
    }

    #[test]
    fn syntax_errors_name_the_token_and_position() {
        assert_eq!(
            parse("SELECT * FORM c"),
            Err(QueryError::Syntax {
                near: "FORM".into(),
                position: 9
            })
        );
        assert_eq!(
            parse("SELECT"),
            Err(QueryError::Syntax {
                near: "SELECT".into(),
                position: 6
            })
        );
        assert!(matches!(
            parse("SELECT * FROM c WHERE"),
            Err(QueryError::Syntax { .. })
        ));
        assert!(matches!(
            parse("SELECT * FROM c ORDER c.a"),
            Err(QueryError::Syntax { .. })
        ));
        assert!(matches!(
            parse("SELECT TOP c.x * FROM c"),
            Err(QueryError::Syntax { .. })
        ));
    }

    #[test]
    fn limits_are_enforced() {
        let deep = format!("SELECT VALUE {}1{}", "(".repeat(200), ")".repeat(200));
        assert!(matches!(parse(&deep), Err(QueryError::LimitExceeded(_))));
        let long_chain = format!("SELECT VALUE 1{}", " + 1".repeat(5000));
        assert!(matches!(
            parse(&long_chain),
            Err(QueryError::LimitExceeded(_))
        ));
        let path = format!("SELECT VALUE c{} FROM c", ".a".repeat(5000));
        assert!(matches!(parse(&path), Err(QueryError::LimitExceeded(_))));
        let nots = format!("SELECT VALUE {}true", "NOT ".repeat(5000));
        assert!(matches!(parse(&nots), Err(QueryError::LimitExceeded(_))));
        let huge = "x".repeat(QUERY_TEXT_CHARS_MAX + 1);
        assert!(matches!(parse(&huge), Err(QueryError::LimitExceeded(_))));
    }

    #[test]
    fn displayed_trees_at_the_height_limit_parse_back() {
        // Found by the fuzzer: prefix operators displayed in parentheses nest twice as deep.
        let chain = format!("SELECT VALUE {}1", "+".repeat(EXPRESSION_DEPTH_MAX - 1));
        round_trip(&chain);
        let calls = format!(
            "SELECT VALUE {}1{}",
            "ABS(".repeat(EXPRESSION_DEPTH_MAX - 1),
            ")".repeat(EXPRESSION_DEPTH_MAX - 1)
        );
        round_trip(&calls);
        let negatives = format!(
            "SELECT VALUE {}-1{}",
            "[".repeat(EXPRESSION_DEPTH_MAX - 1),
            "]".repeat(EXPRESSION_DEPTH_MAX - 1)
        );
        round_trip(&negatives);
        // The deepest parenthesised nesting the parser accepts must not overflow the stack.
        let parentheses = format!(
            "SELECT VALUE {}1{}",
            "(".repeat(PARSER_RECURSION_MAX - 2),
            ")".repeat(PARSER_RECURSION_MAX - 2)
        );
        assert!(parse(&parentheses).is_ok());
    }

    #[test]
    fn user_defined_function_calls_parse_and_print() {
        let query = parse("SELECT udf.tax(c.price, 2) FROM c").expect("parses");
        assert_eq!(
            query.to_string(),
            parse(&query.to_string()).expect("re-parses").to_string()
        );
        assert!(query.to_string().contains("udf.tax("));
    }
}
